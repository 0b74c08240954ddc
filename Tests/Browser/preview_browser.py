#!/usr/bin/python3
"""Drives `cvcam preview` pages in headless Chromium (Debian's chromium + chromium-driver,
python3-selenium) and prints what it saw as one JSON object on stdout.

Launched by Tests/cvcamTests/PreviewBrowserTests.swift, which starts the servers and checks the
numbers against CaptureVideoPreviewLayer; this script measures and does no geometry itself.

    preview_browser.py CONFIG_JSON

CONFIG_JSON: {"still": URL, "moving": URL, "codes": URL, "artifacts": DIR, "hostile": TEXT,
              "serve": URL, "restart": [ARGV]}
  still:  a face that does not move (geometry for every gravity x rotation x mirroring, click, photo)
  moving: a face crossing the frame (frames arrive, the overlay follows it)
  codes:  two QR codes side by side, the right one's payload hostile HTML (drag sets the rect
          of interest, payload shown as text)
  serve:  a camera of `cvcam serve` (optional); `restart` is a command that makes the daemon
          restart that camera at another size: the page must follow to the new session by itself
"""
import base64
import json
import subprocess
import sys
import time

from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By

from browser_common import browser, set_controls, wait_for

config = json.loads(sys.argv[1])
result = {"errors": []}


READ_DRAWING = """
const view = document.getElementById('view').getBoundingClientRect();
const rel = (r) => [r.left - view.left, r.top - view.top, r.width, r.height];
const overlay = document.getElementById('overlay');
return {
  settings: overlay.dataset.settings || '',
  sequence: Number(overlay.dataset.sequence || -1),
  video: rel(document.getElementById('video').getBoundingClientRect()),
  faces: [...document.querySelectorAll('#faces rect.face')].map((e) => ({
    id: Number(e.dataset.faceId), drawn: rel(e.getBoundingClientRect()),
    device: e.dataset.device.split(',').map(Number) })),
  codes: [...document.querySelectorAll('#codes text.payload')].map((e) => e.textContent),
  roi: document.getElementById('roi').dataset.device || '',
};
"""


def settings_key(width, height, gravity, rotation, mirrored):
    return "%d,%d,%s,%d,%s" % (width, height, gravity, rotation, "true" if mirrored else "false")


def still_face(driver):
    driver.get(config["still"])
    wait_for(lambda: driver.execute_script("return document.getElementById('status').textContent") == "live",
             15, "the WebSocket")
    combos = []
    for (width, height) in [(640, 480), (300, 500)]:
        for gravity in ["resize", "resizeAspect", "resizeAspectFill"]:
            for rotation in [0, 90, 180, 270]:
                for mirrored in [False, True]:
                    set_controls(driver, width, height, gravity, rotation, mirrored)
                    key = settings_key(width, height, gravity, rotation, mirrored)

                    def current():
                        d = driver.execute_script(READ_DRAWING)
                        return d if d["settings"] == key and d["faces"] else None
                    drawing = wait_for(current, 10, "a face drawn for " + key)
                    combos.append({"width": width, "height": height, "gravity": gravity, "rotation": rotation,
                                   "mirrored": mirrored, "video": drawing["video"], "faces": drawing["faces"]})
    result["geometry"] = combos

    # A click at a known layer point: the server answers with the device point it converted.
    width, height, gravity, rotation, mirrored = 640, 480, "resizeAspect", 90, True
    set_controls(driver, width, height, gravity, rotation, mirrored)
    key = settings_key(width, height, gravity, rotation, mirrored)
    wait_for(lambda: driver.execute_script(READ_DRAWING)["settings"] == key, 10, key)
    view = driver.find_element(By.ID, "view")
    target = (400, 150)
    # Offsets are from the element's centre.
    ActionChains(driver).move_to_element_with_offset(view, target[0] - width / 2, target[1] - height / 2).click().perform()
    tap = wait_for(lambda: driver.execute_script(
        "const t = document.getElementById('tap-result').dataset;"
        "return t.deviceX ? {x: Number(t.deviceX), y: Number(t.deviceY), set: t.set,"
        " text: document.getElementById('tap-result').textContent} : null"), 10, "the tap answer")
    result["tap"] = {"layer": target, "view": [width, height], "gravity": gravity, "rotation": rotation,
                     "mirrored": mirrored, "device": [tap["x"], tap["y"]], "set": tap["set"], "text": tap["text"]}

    # The photo button: a link to a JPEG the server keeps.
    driver.find_element(By.ID, "photo").click()
    href = wait_for(lambda: driver.execute_script(
        "const a = document.querySelector('#photo-result a'); return a ? a.getAttribute('href') : null"),
        15, "the photo link")
    fetched = driver.execute_async_script(
        """
        const done = arguments[arguments.length - 1];
        fetch(arguments[0]).then(async (r) => {
          const bytes = new Uint8Array(await r.arrayBuffer());
          done({status: r.status, type: r.headers.get('content-type'), size: bytes.length,
                head: Array.from(bytes.slice(0, 3))});
        }).catch((e) => done({error: String(e)}));
        """, href)
    result["photo"] = {"href": href, **fetched}
    time.sleep(0.3)
    driver.save_screenshot(config["artifacts"] + "/preview-still.png")


def moving_face(driver):
    driver.get(config["moving"])
    wait_for(lambda: driver.execute_script("return document.getElementById('status').textContent") == "live",
             15, "the WebSocket")
    set_controls(driver, 640, 480, "resizeAspect", 0, False)
    natural = wait_for(lambda: driver.execute_script(
        "const v = document.getElementById('video'); return v.naturalWidth ? [v.naturalWidth, v.naturalHeight] : null"),
        10, "the first frame")
    # Wait until the face is wholly in the frame (it enters from the left, where a partial face's
    # box jitters), then sample 1 s apart: 20 px of movement each time.
    wait_for(lambda: (lambda d: d["faces"] and d["faces"][0]["drawn"][0] > 30)(driver.execute_script(READ_DRAWING)),
             40, "the face to be wholly in view")
    samples = []
    for _ in range(4):
        d = wait_for(lambda: (lambda d: d if d["faces"] else None)(driver.execute_script(READ_DRAWING)), 10, "a face")
        # What the browser decoded: a hash of the image's pixels, and the server's frame counter.
        pixels = driver.execute_script(
            """
            const v = document.getElementById('video');
            const c = document.createElement('canvas'); c.width = 64; c.height = 48;
            const g = c.getContext('2d'); g.drawImage(v, 0, 0, 64, 48);
            const d = g.getImageData(0, 0, 64, 48).data; let h = 0;
            for (let i = 0; i < d.length; i += 4) h = (h * 31 + d[i] + 7 * d[i + 1] + 13 * d[i + 2]) >>> 0;
            return h;
            """)
        encoded = driver.execute_script("return Number(document.getElementById('counters').dataset.encoded || 0)")
        samples.append({"t": time.time(), "face": d["faces"][0]["drawn"], "device": d["faces"][0]["device"],
                        "pixels": pixels, "encoded": encoded})
        time.sleep(1.0)
    result["moving"] = {"natural": natural, "samples": samples}
    driver.save_screenshot(config["artifacts"] + "/preview-moving.png")


def codes(driver):
    driver.get(config["codes"])
    wait_for(lambda: driver.execute_script("return document.getElementById('status').textContent") == "live",
             15, "the WebSocket")
    width, height = 640, 240
    set_controls(driver, width, height, "resizeAspect", 0, False)
    hostile = config["hostile"]
    both = wait_for(lambda: (lambda d: d if len(d["codes"]) >= 2 else None)(driver.execute_script(READ_DRAWING)),
                    15, "both codes")
    alert = True
    try:
        driver.switch_to.alert
    except NoAlertPresentException:
        alert = False
    result["codesBefore"] = {
        "payloads": both["codes"],
        "imgCount": driver.execute_script("return document.querySelectorAll('img').length"),
        "hostileAsText": driver.execute_script(
            "const hostile = arguments[0];"
            "return [...document.querySelectorAll('#codes text.payload')].some((e) => e.textContent === hostile"
            " && e.childElementCount === 0)", hostile),
        "alert": alert,
    }
    # Drag over the left half of the view: that becomes the rect of interest.
    view = driver.find_element(By.ID, "view")
    start, end = (4, 4), (316, 236)
    ActionChains(driver).move_to_element_with_offset(view, start[0] - width / 2, start[1] - height / 2) \
        .click_and_hold().move_by_offset(100, 100) \
        .move_to_element_with_offset(view, end[0] - width / 2, end[1] - height / 2).release().perform()
    roi = wait_for(lambda: (lambda d: d["roi"] if d["roi"] and d["roi"] != "0,0,1,1" else None)(
        driver.execute_script(READ_DRAWING)), 10, "the rect of interest")
    began = time.time()
    after = wait_for(lambda: (lambda d: d if len(d["codes"]) == 1 else None)(driver.execute_script(READ_DRAWING)),
                     10, "the code outside the rect of interest to leave")
    gone_after = time.time() - began
    later = []  # 3 s of samples: the code outside stays gone, the one inside is still reported
    for _ in range(30):
        later.append(driver.execute_script(READ_DRAWING)["codes"])
        time.sleep(0.1)
    result["drag"] = {"layer": [start[0], start[1], end[0] - start[0], end[1] - start[1]], "view": [width, height],
                      "roi": [float(v) for v in roi.split(",")], "codesAfter": after["codes"],
                      "codesLater": later, "secondsUntilGone": gone_after}
    driver.save_screenshot(config["artifacts"] + "/preview-codes.png")


def serve_restart(driver):
    driver.get(config["serve"])
    status = lambda: driver.execute_script("return document.getElementById('status').textContent")
    natural = lambda: driver.execute_script(
        "const v = document.getElementById('video'); return v.naturalWidth ? [v.naturalWidth, v.naturalHeight] : null")
    wait_for(lambda: status() == "live", 15, "the WebSocket")
    before = wait_for(natural, 15, "the first frame")
    subprocess.run(config["restart"], check=True)
    statuses = set()

    def followed():
        statuses.add(status())
        size = natural()
        return size if size and size != before and status() == "live" else None
    after = wait_for(followed, 30, "the page to show the restarted camera")
    result["serve"] = {"before": before, "after": after, "statuses": sorted(statuses)}
    driver.save_screenshot(config["artifacts"] + "/preview-serve-restarted.png")


driver = browser()
try:
    steps = (moving_face, still_face, codes) + ((serve_restart,) if "serve" in config else ())
    for step in steps:
        try:
            step(driver)
        except Exception as error:  # reported, and the Swift test fails on it
            result["errors"].append("%s: %s" % (step.__name__, error))
            try:
                driver.save_screenshot(config["artifacts"] + "/failed-%s.png" % step.__name__)
            except Exception:
                pass
finally:
    driver.quit()
print(json.dumps(result))
