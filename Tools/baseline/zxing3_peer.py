#!/usr/bin/env python3
"""zxing-cpp 3.x (PyPI `zxing-cpp`) as a peer reader for Tools/bench-codes, for measurement only:
the product reads codes with Debian's ZBar and zxing-cpp 1.4. Tools/bench-codes installs the
package into a virtual environment under .build/ and starts this script there.

Protocol, one request per image on standard input, one JSON line per answer on standard output:

    request:  "<width> <height> <formats>\n" then width*height bytes of 8-bit gray pixels
              <formats>: comma-separated zxing-cpp format names (e.g. QRCode,MicroQRCode) or "all"
    answer:   {"ms": <CPU ms of read_barcodes>, "codes": [{"format": ..., "bytes": <base64>,
              "text": ..., "content_type": ..., "symbology": ..., "position": [[x, y] * 4]}]}

`read_barcodes` runs with the library's defaults (try_rotate, try_downscale, try_invert, the
local-average binarizer) and TextMode.Plain (the bytes transcoded by ECI or guessed character
set, no HRI brackets), as a user of the Python package would call it. The time is the thread's
CPU time around that call only. A line "version" answers {"version": ...}.
"""
import base64
import importlib.metadata
import json
import sys
import time

import zxingcpp


def formats(spec):
    """Keyword arguments of read_barcodes for `spec`: none for "all" (its default: every format)."""
    if spec == "all":
        return {}
    out = None
    for name in spec.split(","):
        f = getattr(zxingcpp.BarcodeFormat, name)
        out = f if out is None else out | f
    return {"formats": out}


def main():
    stdin = sys.stdin.buffer
    stdout = sys.stdout
    cache = {}
    while True:
        line = stdin.readline()
        if not line:
            return
        line = line.decode("ascii").strip()
        if line == "version":
            stdout.write(json.dumps({"version": importlib.metadata.version("zxing-cpp")}) + "\n")
            stdout.flush()
            continue
        w, h, spec = line.split(" ")
        w, h = int(w), int(h)
        pixels = stdin.read(w * h)
        if len(pixels) != w * h:
            return
        if spec not in cache:
            cache[spec] = formats(spec)
        image = memoryview(pixels).cast("B", (h, w))
        t0 = time.thread_time_ns()
        results = zxingcpp.read_barcodes(image, text_mode=zxingcpp.TextMode.Plain, **cache[spec])
        ms = (time.thread_time_ns() - t0) / 1e6
        codes = []
        for b in results:
            p = b.position
            codes.append({
                "format": b.format.name,
                "bytes": base64.b64encode(bytes(b.bytes)).decode("ascii"),
                "text": b.text,
                "content_type": b.content_type.name,
                "symbology": b.symbology_identifier,
                "position": [[q.x, q.y] for q in (p.top_left, p.top_right, p.bottom_right, p.bottom_left)],
            })
        stdout.write(json.dumps({"ms": ms, "codes": codes}) + "\n")
        stdout.flush()


if __name__ == "__main__":
    main()
