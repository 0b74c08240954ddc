#!/usr/bin/python3
"""The dashboard of `cvcam serve` in headless Chromium (Debian's chromium, chromium-driver and
python3-selenium): waits for a camera's snapshot and clip to be listed, checks the thumbnails and
the clip's poster are pictures, clicks the clip to play it, and prints what it saw as one JSON
object on stdout. Usage: dashboard_browser.py URL CAMERA SCREENSHOT"""

import json
import sys
import time

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.common.by import By

url, camera, screenshot = sys.argv[1], sys.argv[2], sys.argv[3]
options = Options()
for argument in ("--headless=new", "--no-sandbox", "--window-size=1280,900"):
    options.add_argument(argument)
options.binary_location = "/usr/bin/chromium"
driver = webdriver.Chrome(options=options)
seen = {}
try:
    driver.get(url)
    li = f"li[data-name={camera}]"
    end = time.time() + 120
    while time.time() < end:
        clips = driver.find_elements(By.CSS_SELECTOR, f"{li} .clips .file img")
        snapshots = driver.find_elements(By.CSS_SELECTOR, f"{li} .snapshots .file img")
        if clips and snapshots:
            break
        time.sleep(0.5)
    seen["clips"] = len(clips)
    seen["snapshots"] = len(snapshots)
    seen["state"] = driver.find_element(By.CSS_SELECTOR, f"{li} .state").text
    seen["displayName"] = driver.find_element(By.CSS_SELECTOR, f"{li} .display-name").text
    if clips and snapshots:
        width = "return arguments[0].complete ? arguments[0].naturalWidth : -1"
        end = time.time() + 30
        while time.time() < end and (driver.execute_script(width, clips[0]) <= 0 or driver.execute_script(width, snapshots[0]) <= 0):
            time.sleep(0.2)
        seen["posterWidth"] = driver.execute_script(width, clips[0])
        seen["snapshotWidth"] = driver.execute_script(width, snapshots[0])
        seen["download"] = driver.find_element(By.CSS_SELECTOR, f"{li} .clips .file a").get_attribute("href")
        clips[0].click()
        time.sleep(1)
        seen["playing"] = driver.execute_script("return arguments[0].src", clips[0])
        seen["playingWidth"] = driver.execute_script(width, clips[0])
    seen["facts"] = driver.find_element(By.CSS_SELECTOR, f"{li} .facts").text
    driver.save_screenshot(screenshot)
finally:
    driver.quit()
print(json.dumps(seen))
