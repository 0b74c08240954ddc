import CaptureKit
import Foundation
import Testing

@testable import CaptureJobs
@testable import CapturePreview
import AppTestSupport

/// A click on the preview page becomes the focus and exposure point of interest: `cvcam preview`
/// on the emulated camera (a child process with the emulator preloaded and a control log of its
/// own), driven over the page's WebSocket; and on a synthetic camera, which has no points.
@Suite(.serialized) struct PreviewPointOfInterestTests {
    /// A WebSocket client just big enough for the page's protocol: text frames out (masked, as
    /// a client must send them), text frames in.
    final class PageSocket {
        let fd: Int32
        private var pending = [UInt8]()

        init(port: Int, path: String) throws {
            fd = try LoopbackSocket.connect(port: port, receiveTimeout: 10)
            let request = [
                "GET \(path) HTTP/1.1", "Host: 127.0.0.1:\(port)", "Upgrade: websocket", "Connection: Upgrade",
                "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13", "", "",
            ].joined(separator: "\r\n")
            try write(Array(request.utf8))
            while !String(decoding: pending, as: UTF8.self).contains("\r\n\r\n") { try fill() }
            let text = String(decoding: pending, as: UTF8.self)
            let head = text.components(separatedBy: "\r\n\r\n")[0]
            guard head.hasPrefix("HTTP/1.1 101") else { throw PreviewBrowserRun.Failure(description: "no upgrade: \(head)") }
            pending.removeFirst(head.utf8.count + 4)
        }

        deinit { _ = Glibc.close(fd) }

        private func write(_ bytes: [UInt8]) throws {
            let sent = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
            guard sent == bytes.count else { throw PreviewBrowserRun.Failure(description: "send: errno \(errno)") }
        }

        private func fill() throws {
            var buffer = [UInt8](repeating: 0, count: 65536)
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { throw PreviewBrowserRun.Failure(description: "the server closed or said nothing: errno \(errno)") }
            pending += buffer[0..<n]
        }

        /// Sends one JSON object as a masked text frame.
        func post(_ object: [String: Any]) throws {
            let payload = Array(try JSONSerialization.data(withJSONObject: object))
            let mask: [UInt8] = [0x37, 0xfa, 0x21, 0x3d]
            var frame: [UInt8] = [0x81]
            if payload.count < 126 {
                frame.append(0x80 | UInt8(payload.count))
            } else {
                frame += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xff)]
            }
            frame += mask
            frame += payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
            try write(frame)
        }

        /// The next text frame from the server, as JSON.
        func receive() throws -> [String: Any] {
            while true {
                while pending.count < 2 { try fill() }
                var length = Int(pending[1] & 0x7f)
                var start = 2
                if length == 126 {
                    while pending.count < 4 { try fill() }
                    length = Int(pending[2]) << 8 | Int(pending[3])
                    start = 4
                } else if length == 127 {
                    while pending.count < 10 { try fill() }
                    length = pending[2..<10].reduce(0) { $0 << 8 | Int($1) }
                    start = 10
                }
                while pending.count < start + length { try fill() }
                let opcode = pending[0] & 0x0f
                let payload = Array(pending[start..<(start + length)])
                pending.removeFirst(start + length)
                guard opcode == 1 else { continue }  // pings and the like
                return try #require(try JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any])
            }
        }

        /// Sends `object` and waits for the first answer of `type`.
        func exchange(_ object: [String: Any], answer type: String) throws -> [String: Any] {
            try post(object)
            for _ in 0..<500 {
                let message = try receive()
                if message["type"] as? String == type { return message }
                if message["type"] as? String == "error" { throw PreviewBrowserRun.Failure(description: "\(message)") }
            }
            throw PreviewBrowserRun.Failure(description: "no \(type) answer")
        }
    }

    @Test func aClickOnTheEmulatedCameraSetsFocusAndExposurePointsOfInterest() throws {
        let emu = try EmulatedCamera()
        defer { emu.remove() }
        try emu.faults("control-log")
        let server = try RunningCLI(
            ["preview", "--size", "640x480", "--listen", "127.0.0.1:0"] + EmulatedCamera.device, environment: emu.environment)
        defer { server.kill() }
        let line = try #require(server.waitForLine(containing: "preview: ", timeout: 60), "\(server.errorOutput)")
        let port = try #require(URL(string: String(line.dropFirst("preview: ".count)))?.port)
        let page = try PageSocket(port: port, path: "/cameras/camera/ws")

        // A stretched 800x600 view: the click at (200, 450) is the device point (0.25, 0.75).
        _ = try page.exchange(["type": "view", "width": 800, "height": 600, "gravity": "resize"], answer: "geometry")
        let clicked = CGPoint(x: 200, y: 450)
        let tap = try page.exchange(["type": "tap", "x": Double(clicked.x), "y": Double(clicked.y)], answer: "tap")
        let layer = try CaptureVideoPreviewLayer(
            bounds: CGRect(x: 0, y: 0, width: 800, height: 600), videoGravity: .resize, videoRotationAngle: 0,
            isVideoMirrored: false, frameDimensions: .init(width: 640, height: 480))
        let expected = layer.captureDevicePointConverted(fromLayerPoint: clicked)
        let device = try #require(tap["devicePoint"] as? [String: Double])
        #expect(abs(device["x"]! - Double(expected.x)) < 1e-9 && abs(device["y"]! - Double(expected.y)) < 1e-9)
        #expect(abs(device["x"]! - 0.25) < 1e-9 && abs(device["y"]! - 0.75) < 1e-9)
        #expect(tap["focusPointOfInterestSet"] as? Bool == true)
        #expect(tap["exposurePointOfInterestSet"] as? Bool == true)
        #expect(tap["pointOfInterestSet"] as? Bool == true)
        // The emulated camera has no auto_focus_start (without extra-controls): continuous focus.
        #expect(
            tap["message"] as? String
                == "Focusing and exposing on the point clicked: focus (continuousAutoFocus) and exposure (continuousAutoExposure) point of interest set at device point (0.250, 0.750)")

        // What reached the camera: the region around (160, 360) in 640x480 (the camera's
        // smallest, 160x120), focus following it, then exposure on the same region (both bits).
        let writes = try String(contentsOf: emu.log, encoding: .utf8).split(separator: "\n").map { $0.split(separator: " ") }
        let regions = writes.filter { $0[1] == "0x00981ae1" }.map { String($0[2]) }
        let bits = writes.filter { $0[1] == "0x00981ae2" }.compactMap { Int($0[2]) }
        #expect(regions == ["80,300,160,120", "80,300,160,120"])
        #expect(bits.last.map { $0 & 0b1001 } == 0b1001, "\(bits)")
        #expect(writes.contains { $0[1] == "0x009a090c" && $0[2] == "1" }, "continuous focus was started")

        // A click in a letterbox bar changes nothing.
        _ = try page.exchange(["type": "view", "width": 800, "height": 800, "gravity": "resizeAspect"], answer: "geometry")
        let bar = try page.exchange(["type": "tap", "x": 400, "y": 20], answer: "tap")
        #expect(bar["pointOfInterestSet"] as? Bool == false && bar["focusPointOfInterestSet"] as? Bool == false)
        #expect((bar["message"] as? String)?.contains("outside the frame") == true)
    }

    @Test func aSyntheticCameraHasNoPointsOfInterestAndThePageIsToldSo() throws {
        let device = try CaptureDevice(
            syntheticScene: SyntheticScene(
                size: .init(width: 320, height: 240), frameRate: 10, frameCount: 1, background: .color(red: 0, green: 0, blue: 0),
                sprites: []))
        #expect(!device.isFocusPointOfInterestSupported && !device.isExposurePointOfInterestSupported)
        #expect(device.focusPointOfInterest == CGPoint(x: 0.5, y: 0.5))
        try device.lockForConfiguration()
        for set in [device.setFocusPointOfInterest, device.setExposurePointOfInterest] {
            #expect {
                try set(CGPoint(x: 0.5, y: 0.5))
            } throws: { error in
                (error as? CaptureError)?.code == .unsupported
                    && (error as? CaptureError)?.message.contains("lacks the UVC region-of-interest control") == true
            }
        }
        device.unlockForConfiguration()

        let fixture = try UnstartedPreviewCamera(device: device)
        let camera = fixture.camera
        let tap = try camera.tap(at: CGPoint(x: 80, y: 180), in: .init(width: 320, height: 240, gravity: .resizeAspect))
        #expect(tap.devicePoint == PreviewMessage.Point(CGPoint(x: 0.25, y: 0.75)))
        #expect(!tap.pointOfInterestSet && !tap.focusPointOfInterestSet && !tap.exposurePointOfInterestSet)
        #expect(
            tap.message
                == "\(device.localizedName) cannot focus or expose on a chosen point: not supported (isFocusPointOfInterestSupported and isExposurePointOfInterestSupported are false); the click was at device point (0.250, 0.750)")
    }
}
