#!/usr/bin/python3
"""The motion boxes of a `cvcam preview --motion` page in headless Chromium (Debian's chromium,
chromium-driver and python3-selenium), and prints what it saw as one JSON object on stdout.

Launched by App/Tests/CapturePreviewTests/PreviewMotionTests.swift, which starts the server
on a scene that is still, then has a picture cross it, and checks the numbers against
CaptureVideoPreviewLayer; this script measures and does no geometry itself.

    preview_motion.py CONFIG_JSON

CONFIG_JSON: {"url": URL, "artifacts": DIR, "width": W, "height": H, "gravity": G,
              "rotation": R, "mirrored": true|false}
Waits (on conditions, with generous bounds) for a drawing made for those settings with no motion
box, then for motion boxes (sampled a few times, a screenshot `preview-motion.png`), then for
the boxes to be gone again once the picture has left.
"""
import json
import sys

from browser_common import browser, set_controls, wait_for

config = json.loads(sys.argv[1])
result = {"errors": [], "samples": [], "stillBefore": False, "clearedAfter": False}


READ = """
const view = document.getElementById('view').getBoundingClientRect();
const rel = (r) => [r.left - view.left, r.top - view.top, r.width, r.height];
const overlay = document.getElementById('overlay');
const style = (e) => { const s = getComputedStyle(e); return [s.stroke, s.strokeDasharray]; };
const boxes = [...document.querySelectorAll('#motion rect.motion')];
return {
  settings: overlay.dataset.settings || '',
  time: document.getElementById('motion').dataset.time || '',
  motion: boxes.map((e) => ({ drawn: rel(e.getBoundingClientRect()), device: e.dataset.device.split(',').map(Number) })),
  motionStyle: boxes.length ? style(boxes[0]) : null,
};
"""

# The style a face box gets, measured on a probe element placed in the faces group.
FACE_STYLE = """
const probe = document.createElementNS('http://www.w3.org/2000/svg', 'rect');
probe.setAttribute('class', 'face');
document.getElementById('faces').append(probe);
const s = getComputedStyle(probe);
const answer = [s.stroke, s.strokeDasharray];
probe.remove();
return answer;
"""

driver = browser()
try:
    driver.get(config["url"])
    wait_for(lambda: driver.execute_script("return document.getElementById('status').textContent") == "live",
             60, "the WebSocket")
    set_controls(driver, config["width"], config["height"], config["gravity"], config["rotation"], config["mirrored"])
    key = "%d,%d,%s,%d,%s" % (config["width"], config["height"], config["gravity"], config["rotation"],
                              "true" if config["mirrored"] else "false")
    read = lambda: driver.execute_script(READ)
    # Still first: a drawing for these settings without a motion box.
    wait_for(lambda: (lambda d: d["settings"] == key and not d["motion"])(read()), 120, "a still drawing")
    result["stillBefore"] = True
    # Then the picture crosses: boxes, sampled at a few distinct frame times.
    seen_times = set()

    def sample():
        d = read()
        if d["settings"] == key and d["motion"] and d["time"] not in seen_times:
            seen_times.add(d["time"])
            result["samples"].append({"time": float(d["time"]), "motion": d["motion"], "style": d["motionStyle"]})
            if len(result["samples"]) == 2:
                driver.save_screenshot(config["artifacts"] + "/preview-motion.png")
        return len(result["samples"]) >= 4
    wait_for(sample, 120, "motion boxes on the overlay")
    result["faceStyle"] = driver.execute_script(FACE_STYLE)
    # And gone once it has left and the motion ended.
    wait_for(lambda: (lambda d: d["settings"] == key and not d["motion"])(read()), 120, "the motion boxes to go")
    result["clearedAfter"] = True
except Exception as error:  # reported to the test, which prints it
    result["errors"].append("%s: %s" % (type(error).__name__, error))
finally:
    driver.quit()
print(json.dumps(result))
