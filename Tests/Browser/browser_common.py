"""What the preview's browser scripts share: waiting on a condition, a headless Chromium
(Debian's chromium, chromium-driver and python3-selenium), and setting the page's view controls.
Imported by preview_browser.py, preview_motion.py and preview_states.py (their own folder is on
Python's path when they run)."""
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service


def wait_for(predicate, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise TimeoutError("timed out after %.0f s waiting for %s" % (timeout, what))


def browser(window_size="1200,900"):
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for arg in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=" + window_size, "--force-device-scale-factor=1"]:
        options.add_argument(arg)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


def set_controls(driver, width, height, gravity, rotation, mirrored):
    driver.execute_script(
        """
        const [w, h, g, r, m] = arguments;
        const set = (id, prop, v) => {
          const e = document.getElementById(id);
          if (e[prop] !== v) { e[prop] = v; e.dispatchEvent(new Event('change')); }
        };
        set('view-width', 'value', String(w)); set('view-height', 'value', String(h));
        set('gravity', 'value', g);
        set('rotation', 'value', String(r)); set('mirrored', 'checked', m);
        """, width, height, gravity, rotation, mirrored)
