#!/usr/bin/python3
"""Opens a `cvcam preview` page in headless Chromium, sets a view and a connection, clicks a
point and drags a rect of interest, and saves a screenshot: how Docs/preview.png is made.

    preview_screenshot.py URL OUT.png [ROTATION] [MIRRORED]
"""
import sys
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By

url, out = sys.argv[1], sys.argv[2]
rotation = int(sys.argv[3]) if len(sys.argv) > 3 else 0
mirrored = len(sys.argv) > 4 and sys.argv[4] == "mirrored"
options = webdriver.ChromeOptions()
options.binary_location = "/usr/bin/chromium"
for arg in ["--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1120,780", "--force-device-scale-factor=1"]:
    options.add_argument(arg)
driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
try:
    driver.get(url)
    deadline = time.time() + 20
    while driver.execute_script("return document.getElementById('status').textContent") != "live":
        if time.time() > deadline:
            raise SystemExit("the page did not connect")
        time.sleep(0.1)
    driver.execute_script(
        "const r = document.getElementById('rotation'); r.value = arguments[0]; r.dispatchEvent(new Event('change'));"
        "const m = document.getElementById('mirrored'); m.checked = arguments[1]; m.dispatchEvent(new Event('change'));",
        str(rotation), mirrored)
    time.sleep(1.5)
    view = driver.find_element(By.ID, "view")
    ActionChains(driver).move_to_element_with_offset(view, 60, 40).click().perform()
    time.sleep(1.5)
    driver.save_screenshot(out)
finally:
    driver.quit()
