#!/usr/bin/python3
"""The program a user would write instead of cvcam: a plain loop over a video file with
OpenCV's YuNet face detector and ZBar, using Debian's python3-opencv and python3-pyzbar.

    /usr/bin/python3 Tools/baseline/loop.py --input clip.avi [--faces] [--codes]

Reads frames with cv2.VideoCapture; for each frame, cv2.FaceDetectorYN (the same model file as
cvcam, Models/face_detection_yunet_2022mar.onnx, score threshold 0.9, NMS 0.3, the image at its
own size) and/or a BGR->gray conversion and pyzbar.decode restricted to QR codes (the same work
as cvcam's `[.face, .qr]`). Prints one JSON line: frames, seconds, fps and what it found.
The clock starts before the file is opened (as cvcam's summary does) and after the model is
loaded (cvcam loads it before its session starts too).
"""
import argparse
import json
import os
import sys
import time

import cv2
from pyzbar import pyzbar


def main():
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", required=True)
    parser.add_argument("--faces", action="store_true", help="detect faces (YuNet)")
    parser.add_argument("--codes", action="store_true", help="decode QR codes (ZBar)")
    parser.add_argument("--model", default=os.path.join(root, "Models", "face_detection_yunet_2022mar.onnx"))
    parser.add_argument("--score", type=float, default=0.9)
    args = parser.parse_args()
    if not (args.faces or args.codes):
        parser.error("give --faces, --codes or both")

    detector = None
    if args.faces:
        detector = cv2.FaceDetectorYN.create(args.model, "", (320, 320), args.score, 0.3, 5000)

    start = time.perf_counter()
    cpu_start = time.process_time()
    capture = cv2.VideoCapture(args.input)
    if not capture.isOpened():
        print(f"loop.py: cannot open {args.input}", file=sys.stderr)
        return 1
    frames = faces = codes = 0
    size = None
    while True:
        ok, frame = capture.read()
        if not ok:
            break
        frames += 1
        if detector is not None:
            h, w = frame.shape[:2]
            if size != (w, h):
                detector.setInputSize((w, h))
                size = (w, h)
            _, found = detector.detect(frame)
            faces += 0 if found is None else len(found)
        if args.codes:
            gray = cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY)
            codes += len(pyzbar.decode(gray, symbols=[pyzbar.ZBarSymbol.QRCODE]))
    capture.release()
    seconds = time.perf_counter() - start
    cpu = time.process_time() - cpu_start
    work = "+".join(k for k, on in (("faces", args.faces), ("codes", args.codes)) if on)
    print(json.dumps({
        "kind": "batch", "peer": "python", "input": args.input, "work": work, "frames": frames,
        "seconds": round(seconds, 3), "fps": round(frames / seconds, 2) if seconds > 0 else 0,
        "cpu_ms_per_frame": round(cpu / max(frames, 1) * 1000, 2),
        "faces_per_frame": round(faces / max(frames, 1), 2), "codes_per_frame": round(codes / max(frames, 1), 2),
    }, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
