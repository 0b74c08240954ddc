#!/usr/bin/python3
"""An MJPEG-over-HTTP camera on loopback for cvcam's network-input tests.

Serves GET /stream as multipart/x-mixed-replace, one JPEG part per frame (a bar that moves
across a gradient, with the frame number drawn in), at --fps frames per second, as IP cameras
do; optionally behind Basic authentication, and over TLS (https://) with --tls CERT KEY (PEM files
the caller generates, e.g. with openssl); --save-frames DIR writes the JPEGs it cycles through as
DIR/frame_NN.jpg, so a test can compare what it received byte for byte; --garbage-every N sends
every Nth part as bytes that are no JPEG; --resize-after N WxH sends frames of another size once
N frames were served in all. Prints "ready PORT" once it listens (port 0 = any
free port) and runs until SIGTERM/SIGINT, then prints "served N": the frames it sent in all.

Packages (Tools/setup): python3-opencv (frames encoded with cv2.imencode).
"""
import argparse
import base64
import signal
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import cv2
import numpy as np

BOUNDARY = "cvcamframe"


def make_frames(width, height, count):
    frames = []
    ramp = np.tile(np.linspace(0, 255, width, dtype=np.uint8), (height, 1))
    for i in range(count):
        image = cv2.merge([ramp, np.flipud(ramp), np.full_like(ramp, 96)])
        x = (i * 8) % width
        cv2.rectangle(image, (x, 0), (min(x + 16, width - 1), height - 1), (255, 255, 255), -1)
        cv2.putText(image, str(i), (8, height // 2), cv2.FONT_HERSHEY_SIMPLEX, 1.0, (0, 0, 0), 2)
        ok, jpeg = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 85])
        assert ok
        frames.append(jpeg.tobytes())
    return frames


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--size", default="320x240")
    parser.add_argument("--fps", type=float, default=10)
    parser.add_argument("--user")
    parser.add_argument("--password")
    parser.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"), help="serve https:// with this certificate")
    parser.add_argument("--save-frames", metavar="DIR", help="write the served JPEGs into DIR")
    parser.add_argument("--resize-after", nargs=2, metavar=("N", "WxH"),
                        help="once N frames are served in all, send frames of another size (a camera reconfigured)")
    parser.add_argument("--garbage-every", type=int, default=0, metavar="N",
                        help="send every Nth part as bytes that are no JPEG (a damaged frame)")
    args = parser.parse_args()
    width, height = (int(v) for v in args.size.split("x"))
    frames = make_frames(width, height, 64)
    resized_after, resized = None, None
    if args.resize_after:
        resized_after = int(args.resize_after[0])
        resized = make_frames(*(int(v) for v in args.resize_after[1].split("x")), 8)
    if args.save_frames:
        for i, jpeg in enumerate(frames):
            with open(f"{args.save_frames}/frame_{i:02d}.jpg", "wb") as f:
                f.write(jpeg)
    expected = None
    if args.user:
        expected = "Basic " + base64.b64encode(f"{args.user}:{args.password or ''}".encode()).decode()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def log_message(self, *_):
            pass

        def do_GET(self):
            if self.path != "/stream":
                self.send_error(404)
                return
            if expected and self.headers.get("Authorization") != expected:
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="cvcam-test"')
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("Content-Type", f"multipart/x-mixed-replace;boundary={BOUNDARY}")
            self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            start = time.monotonic()
            n = 0
            try:
                while not stopping.is_set():
                    jpeg = frames[n % len(frames)]
                    if resized_after is not None and served[0] >= resized_after:
                        jpeg = resized[n % len(resized)]
                    if args.garbage_every and n % args.garbage_every == args.garbage_every - 1:
                        jpeg = bytes((i * 37 + n) % 256 for i in range(len(jpeg)))
                    self.wfile.write(
                        f"--{BOUNDARY}\r\nContent-Type: image/jpeg\r\nContent-Length: {len(jpeg)}\r\n\r\n".encode())
                    self.wfile.write(jpeg)
                    self.wfile.write(b"\r\n")
                    self.wfile.flush()
                    with served_lock:
                        served[0] += 1
                    n += 1
                    delay = start + n / args.fps - time.monotonic()
                    if delay > 0:
                        time.sleep(delay)
            except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
                pass

    # A parent may have started us with these blocked or ignored (test runners do): restore them.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    stopping = threading.Event()
    served = [0]
    served_lock = threading.Lock()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    if args.tls:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.tls[0], args.tls[1])
        # Handshake in the handler's thread (on first read), not in the accepting one.
        server.socket = context.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)

    def stop(*_):
        stopping.set()
        threading.Thread(target=server.shutdown).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(f"ready {server.server_address[1]}", flush=True)
    server.serve_forever()
    server.server_close()
    print(f"served {served[0]}", flush=True)
    sys.exit(0)


if __name__ == "__main__":
    main()
