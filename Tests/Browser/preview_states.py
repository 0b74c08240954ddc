#!/usr/bin/python3
"""Reads what `cvcam serve`'s preview pages tell a person, in headless Chromium (Debian's
chromium + chromium-driver, python3-selenium), and prints it as one JSON object on stdout;
saves a screenshot of each page.

Launched by App/Tests/CapturePreviewTests/PreviewStatusBrowserTests.swift, which starts the
daemon and checks the result.

    preview_states.py CONFIG_JSON

CONFIG_JSON: {"index": URL, "offline": URL, "live": URL, "artifacts": DIR}
  index:   the list of cameras (`/`)
  offline: the page of a camera that cannot open its input
  live:    the page of a live camera (a network stream): its photo event shows a clock time
"""
import json
import sys
import time

from selenium.webdriver.common.by import By

from browser_common import browser, wait_for

config = json.loads(sys.argv[1])
result = {"errors": []}


driver = browser("1120,780")
try:
    # The list: every camera's display name, status and reason; the running camera's thumbnail.
    try:
        driver.get(config["index"])
        wait_for(lambda: driver.execute_script(
            "const i = document.querySelector('li.camera[data-state=live] img.thumbnail');"
            "return i && !i.hidden && i.complete && i.naturalWidth > 0"), 30, "a thumbnail")
        # The list refreshes itself: wait for the failing camera's reason to be there.
        wait_for(lambda: driver.execute_script(
            "return [...document.querySelectorAll('li.camera[data-state=offline] .reason')].some(r => r.textContent)"),
            30, "the reason of the camera that is not streaming")
        result["index"] = driver.execute_script("""
            return [...document.querySelectorAll('li.camera')].map(li => ({
              name: li.dataset.name, state: li.dataset.state,
              displayName: li.querySelector('.display-name').textContent,
              stateText: li.querySelector('.state').textContent,
              reason: li.querySelector('.reason').textContent,
              thumbnail: (() => { const i = li.querySelector('img.thumbnail');
                                  return i.hidden ? null : [i.naturalWidth, i.naturalHeight]; })(),
            }));""")
        result["indexText"] = driver.find_element(By.TAG_NAME, "body").text
        driver.save_screenshot(config["artifacts"] + "/preview-index.png")
    except Exception as e:  # noqa: BLE001 - every failure is reported, the run goes on
        result["errors"].append("index: %r" % e)

    # A camera that is not streaming: the reason instead of a broken image.
    try:
        driver.get(config["offline"])
        wait_for(lambda: driver.execute_script(
            "return !document.getElementById('offline').hidden && document.getElementById('offline-reason').textContent"),
            30, "the reason on the page")
        result["offline"] = driver.execute_script("""
            const v = document.getElementById('video');
            return { title: document.getElementById('offline-title').textContent,
                     reason: document.getElementById('offline-reason').textContent,
                     status: document.getElementById('status').textContent,
                     videoVisible: getComputedStyle(v).visibility !== 'hidden',
                     displayName: document.getElementById('display-name').textContent };""")
        result["offlineText"] = driver.find_element(By.TAG_NAME, "body").text
        driver.save_screenshot(config["artifacts"] + "/preview-offline.png")
    except Exception as e:  # noqa: BLE001
        result["errors"].append("offline: %r" % e)

    # A live camera: a photo's event shows the time of day, not seconds of media time.
    try:
        driver.get(config["live"])
        wait_for(lambda: driver.execute_script("return document.getElementById('status').textContent") == "live",
                 30, "the WebSocket")
        wait_for(lambda: driver.execute_script("return document.getElementById('video').naturalWidth"), 30, "video")
        driver.find_element(By.ID, "photo").click()
        event = wait_for(lambda: driver.execute_script(
            "const li = document.querySelector('#events li'); return li && li.textContent"), 30, "the photo event")
        result["live"] = {"event": event, "controls": driver.find_element(By.ID, "controls").text}
        driver.save_screenshot(config["artifacts"] + "/preview-live.png")
    except Exception as e:  # noqa: BLE001
        result["errors"].append("live: %r" % e)
finally:
    driver.quit()
print(json.dumps(result))
