#!/usr/bin/python3
"""A real RTSP server on loopback for cvcam's network-input tests (GStreamer's RTSP server).

Serves a generated clip (videotestsrc's moving ball over SMPTE bars, MJPEG over RTP) at
rtsp://127.0.0.1:PORT/stream, optionally behind Basic authentication, and over TLS (rtsps://,
RTP interleaved in the TLS connection) with --tls CERT KEY (PEM files the caller generates, e.g.
with openssl). Prints "ready PORT" on stdout once it listens (port 0 = any free port) and runs
until SIGTERM/SIGINT.

Packages (Tools/setup): python3-gi, gir1.2-gst-rtsp-server-1.0, gstreamer1.0-plugins-good.
"""
import argparse
import signal
import sys

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstRtspServer", "1.0")
from gi.repository import Gio, GLib, Gst, GstRtspServer  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--size", default="320x240")
    parser.add_argument("--fps", type=int, default=15)
    parser.add_argument("--user")
    parser.add_argument("--password")
    parser.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"), help="serve rtsps:// with this certificate")
    args = parser.parse_args()
    width, height = (int(v) for v in args.size.split("x"))

    # A parent may have started us with these blocked or ignored (test runners do): restore them.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    Gst.init(None)
    server = GstRtspServer.RTSPServer()
    server.set_address("127.0.0.1")
    server.set_service(str(args.port))
    factory = GstRtspServer.RTSPMediaFactory()
    # One pipeline shared by every client, live: a reconnecting client joins the running clip.
    factory.set_launch(
        f"( videotestsrc is-live=true pattern=smpte horizontal-speed=4 "
        f"! video/x-raw,format=I420,width={width},height={height},framerate={args.fps}/1 "
        f"! jpegenc quality=80 ! rtpjpegpay name=pay0 pt=26 )")
    factory.set_shared(True)
    if args.user or args.tls:
        auth = GstRtspServer.RTSPAuth()
        if args.tls:
            auth.set_tls_certificate(Gio.TlsCertificate.new_from_files(args.tls[0], args.tls[1]))
        # Once a server has an RTSPAuth, only a role the factory permits may watch: the user's
        # when there is one, else every client's (the default token).
        token = GstRtspServer.RTSPToken()
        token.set_string(GstRtspServer.RTSP_TOKEN_MEDIA_FACTORY_ROLE, "viewer")
        if args.user:
            auth.add_basic(GstRtspServer.RTSPAuth.make_basic(args.user, args.password or ""), token)
        else:
            auth.set_default_token(token)
        server.set_auth(auth)
        permissions = GstRtspServer.RTSPPermissions()
        permissions.add_permission_for_role("viewer", "media.factory.access", True)
        permissions.add_permission_for_role("viewer", "media.factory.construct", True)
        factory.set_permissions(permissions)
    server.get_mount_points().add_factory("/stream", factory)
    if server.attach(None) == 0:
        print("error: cannot listen", file=sys.stderr, flush=True)
        sys.exit(1)
    print(f"ready {server.get_bound_port()}", flush=True)

    loop = GLib.MainLoop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, sig, loop.quit)
    loop.run()


if __name__ == "__main__":
    main()
