import CaptureKit
import CaptureKitTesting
import Foundation
import Testing

@testable import CaptureJobs
@testable import CapturePreview
import AppTestSupport

/// One part of the preview's `multipart/x-mixed-replace` stream, split the way a browser reads it.
struct MJPEGPart {
    var headers: [String: String]
    var body: [UInt8]

    /// Every complete part in `bytes` (a stream read so far, or one `MJPEGFanOut.Frame.part`).
    static func parse(_ bytes: [UInt8]) -> [MJPEGPart] {
        let marker = Array("--\(MJPEGFanOut.boundary)\r\n".utf8)
        let blank = Array("\r\n\r\n".utf8)
        var parts: [MJPEGPart] = []
        var i = 0
        while let start = find(marker, in: bytes, from: i) {
            let headStart = start + marker.count
            guard let headEnd = find(blank, in: bytes, from: headStart) else { break }
            var headers: [String: String] = [:]
            for line in String(decoding: bytes[headStart..<headEnd], as: UTF8.self).components(separatedBy: "\r\n") {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            let bodyStart = headEnd + blank.count
            guard let length = headers["content-length"].flatMap(Int.init), bodyStart + length + 2 <= bytes.count else { break }
            parts.append(MJPEGPart(headers: headers, body: Array(bytes[bodyStart..<(bodyStart + length)])))
            i = bodyStart + length
        }
        return parts
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard needle.count <= haystack.count else { return nil }
        var i = start
        while i + needle.count <= haystack.count {
            if haystack[i] == needle[0], haystack[i..<(i + needle.count)].elementsEqual(needle) { return i }
            i += 1
        }
        return nil
    }

    /// The width and height a JPEG declares in its start-of-frame segment, nil when `bytes` is not
    /// a JPEG (no SOI, or no SOF before the scan).
    static func jpegSize(_ bytes: [UInt8]) -> (width: Int, height: Int)? {
        guard bytes.count > 4, bytes[0] == 0xFF, bytes[1] == 0xD8 else { return nil }
        var i = 2
        while i + 9 < bytes.count, bytes[i] == 0xFF {
            let marker = bytes[i + 1]
            let length = Int(bytes[i + 2]) << 8 | Int(bytes[i + 3])
            // SOF0…SOF15 except DHT (C4), JPG (C8) and DAC (CC).
            if (0xC0...0xCF).contains(marker), ![0xC4, 0xC8, 0xCC].contains(marker) {
                return (Int(bytes[i + 7]) << 8 | Int(bytes[i + 8]), Int(bytes[i + 5]) << 8 | Int(bytes[i + 6]))
            }
            if marker == 0xDA { return nil }
            i += 2 + length
        }
        return nil
    }

    /// Whether `bytes` starts with SOI (FFD8) and ends with EOI (FFD9).
    static func isWholeJPEG(_ bytes: [UInt8]) -> Bool {
        bytes.count > 4 && bytes.prefix(2) == [0xFF, 0xD8] && bytes.suffix(2) == [0xFF, 0xD9]
    }
}

/// `MJPEGFanOut` on its own: a camera's JPEG goes to viewers byte for byte when it needs no
/// scaling; everything else is encoded; the rate limit and "nothing while nobody watches" hold
/// for both.
@Suite struct PreviewPassthroughTests {
    static let camera: JPEGCameraSource = {
        // A fixture every checkout has; failing here means the fixtures are missing.
        try! JPEGCameraSource(jpegAt: CLI.fixture("images/grace_hopper.jpg"))
    }()

    static func sample(at seconds: Double, jpeg: Bool = true) -> SampleBuffer {
        SampleBuffer(
            pixelBuffer: camera.pixelBuffer, presentationTimeStamp: MediaTime(seconds: seconds), duration: .zero,
            sequenceNumber: UInt64(seconds * 1000), inputID: CaptureInput.ID(rawValue: 1),
            jpegData: jpeg ? camera.jpegData : nil)
    }

    static func fanOut(maximumSize: CaptureDevice.Dimensions? = nil, fps: Double = 30) -> MJPEGFanOut {
        MJPEGFanOut(settings: .init(maximumSize: maximumSize, quality: 70, framesPerSecond: fps))
    }

    /// Streams `samples` to one viewer and returns the parts it received.
    static func received(_ samples: [SampleBuffer], through fanOut: MJPEGFanOut) async -> [(MJPEGFanOut.Frame, MJPEGPart)] {
        let viewer = fanOut.frames()
        var got: [(MJPEGFanOut.Frame, MJPEGPart)] = []
        var frames = viewer.makeAsyncIterator()
        for sample in samples {
            let before = fanOut.encodedFrameCount + fanOut.passedThroughFrameCount
            fanOut.stream(sample)
            // Read each frame before the next replaces it (the viewer keeps only the newest).
            if fanOut.encodedFrameCount + fanOut.passedThroughFrameCount > before, let frame = await frames.next() {
                let parts = MJPEGPart.parse(Array(frame.part.readableBytesView))
                #expect(parts.count == 1)
                if let part = parts.first { got.append((frame, part)) }
            }
        }
        fanOut.finish()
        return got
    }

    @Test func aCamerasJPEGIsSentByteForByte() async throws {
        let fanOut = Self.fanOut()
        let got = await Self.received([Self.sample(at: 0), Self.sample(at: 0.1)], through: fanOut)
        #expect(got.count == 2)
        for (frame, part) in got {
            #expect(part.body == Array(Self.camera.jpegData))
            #expect(part.headers["content-type"] == "image/jpeg")
            #expect(part.headers["content-length"] == "\(Self.camera.jpegData.count)")
            #expect(part.headers["x-frame-time"].flatMap(Double.init) != nil)
            #expect(frame.width == Self.camera.pixelBuffer.width && frame.height == Self.camera.pixelBuffer.height)
        }
        #expect(got.map(\.0.number) == [1, 2])
        #expect(fanOut.passedThroughFrameCount == 2)
        #expect(fanOut.encodedFrameCount == 0)
    }

    @Test func aSizeLimitTheFrameFitsStillPassesItThrough() async throws {
        let size = CaptureDevice.Dimensions(width: Self.camera.pixelBuffer.width, height: Self.camera.pixelBuffer.height)
        let fanOut = Self.fanOut(maximumSize: size)
        let got = await Self.received([Self.sample(at: 0)], through: fanOut)
        #expect(got.first?.1.body == Array(Self.camera.jpegData))
        #expect(fanOut.passedThroughFrameCount == 1 && fanOut.encodedFrameCount == 0)
    }

    @Test func aFrameThatMustShrinkIsEncodedAtTheStreamSize() async throws {
        let box = CaptureDevice.Dimensions(width: 200, height: 200)
        let fanOut = Self.fanOut(maximumSize: box)
        let got = await Self.received([Self.sample(at: 0)], through: fanOut)
        let (frame, part) = try #require(got.first)
        let expected = try #require(
            MJPEGFanOut.fitted(.init(width: Self.camera.pixelBuffer.width, height: Self.camera.pixelBuffer.height), in: box))
        #expect(part.body != Array(Self.camera.jpegData))
        #expect(MJPEGPart.isWholeJPEG(part.body))
        let size = try #require(MJPEGPart.jpegSize(part.body))
        #expect(size.width == expected.width && size.height == expected.height)
        #expect(frame.width == expected.width && frame.height == expected.height)
        #expect(fanOut.encodedFrameCount == 1 && fanOut.passedThroughFrameCount == 0)
    }

    @Test func aFrameWithoutTheCamerasJPEGIsEncoded() async throws {
        let fanOut = Self.fanOut()
        let got = await Self.received([Self.sample(at: 0, jpeg: false)], through: fanOut)
        let part = try #require(got.first?.1)
        #expect(part.body != Array(Self.camera.jpegData))
        let size = try #require(MJPEGPart.jpegSize(part.body))
        #expect(size.width == Self.camera.pixelBuffer.width && size.height == Self.camera.pixelBuffer.height)
        #expect(fanOut.encodedFrameCount == 1 && fanOut.passedThroughFrameCount == 0)
    }

    @Test func theRateLimitAndNoViewerRuleHoldForPassedThroughFrames() async throws {
        let fanOut = Self.fanOut(fps: 10)
        // Nobody watching: nothing is sent or counted.
        fanOut.stream(Self.sample(at: 0))
        #expect(fanOut.passedThroughFrameCount == 0 && fanOut.latestFrame == nil)
        // 10 fps: of frames 1/30 s apart, every third goes out.
        let samples = (1...9).map { Self.sample(at: 1 + Double($0) / 30) }
        let got = await Self.received(samples, through: fanOut)
        #expect(got.count == 3, "sent \(got.count) of 9 frames at 30 fps with a 10 fps limit")
        #expect(fanOut.passedThroughFrameCount == 3 && fanOut.encodedFrameCount == 0)
    }
}

/// `cvcam preview` on the emulated MJPEG camera (preloaded into the child only): the stream's
/// parts are the camera's JPEGs untouched, and encoding starts only where the frame must change.
@Suite(.serialized) struct PreviewPassthroughCLITests {
    /// Reads the MJPEG stream until `count` parts arrived or `seconds` passed.
    static func parts(port: Int, count: Int, seconds: Double = 20) -> [MJPEGPart] {
        guard let fd = try? LoopbackSocket.connect(port: port, receiveTimeout: 1) else { return [] }
        defer { close(fd) }
        let request = Array("GET /cameras/camera/stream.mjpeg HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n".utf8)
        _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        let deadline = Date(timeIntervalSinceNow: seconds)
        var parsed: [MJPEGPart] = []
        while Date() < deadline, parsed.count < count {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 { continue }
            if n == 0 { break }
            received += buffer[0..<n]
            parsed = MJPEGPart.parse(received)
        }
        return Array(parsed.prefix(count))
    }

    static func start(_ emu: EmulatedCamera, _ extra: [String]) throws -> (RunningCLI, Int) {
        try PreviewServerTests.startPreview(
            ["--listen", "127.0.0.1:0", "--device", "/dev/video-emulated0", "--size", "1280x720", "--stream-fps", "30"] + extra,
            environment: emu.environment)
    }

    static func stats(port: Int) throws -> [String: Any] {
        let answer = try PreviewServerTests.get("/cameras/camera/stats.json", port: port)
        return try #require(try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any], "\(answer.body)")
    }

    @Test func theCamerasOwnJPEGsReachTheViewerAndNothingIsEncoded() throws {
        let emu = try EmulatedCamera()
        defer { emu.remove() }
        let (server, port) = try Self.start(emu, [])
        defer { server.kill() }
        let parts = Self.parts(port: port, count: 10)
        #expect(parts.count == 10, "\(server.errorOutput)")
        for part in parts {
            #expect(MJPEGPart.isWholeJPEG(part.body))
            let size = MJPEGPart.jpegSize(part.body)
            #expect(size?.width == 1280 && size?.height == 720)
        }
        let stats = try Self.stats(port: port)
        #expect(stats["encodedFrames"] as? Int == 0, "\(stats)")
        let passed = try #require(stats["passedThroughFrames"] as? Int, "\(stats)")
        #expect(passed >= 10, "\(stats)")
        _ = Self.parts(port: port, count: 5)
        let later = try Self.stats(port: port)
        #expect((later["passedThroughFrames"] as? Int ?? 0) > passed, "\(later)")
        #expect(later["encodedFrames"] as? Int == 0, "\(later)")
    }

    @Test(arguments: [["--stream-size", "640x360"], ["--rotate", "90"]])
    func aStreamSizeOrRotationMakesThePreviewEncode(extra: [String]) throws {
        let emu = try EmulatedCamera()
        defer { emu.remove() }
        let (server, port) = try Self.start(emu, extra)
        defer { server.kill() }
        let parts = Self.parts(port: port, count: 5)
        #expect(parts.count == 5, "\(server.errorOutput)")
        let expected = extra[0] == "--rotate" ? (720, 1280) : (640, 360)
        for part in parts {
            let size = MJPEGPart.jpegSize(part.body)
            #expect(size?.width == expected.0 && size?.height == expected.1, "\(extra)")
        }
        let stats = try Self.stats(port: port)
        #expect(stats["passedThroughFrames"] as? Int == 0, "\(stats)")
        #expect((stats["encodedFrames"] as? Int ?? 0) >= 5, "\(stats)")
    }
}

/// An IP camera's MJPEG reaches the browser byte for byte: `cvcam preview` on MJPEG over HTTP.
@Suite(.serialized) struct PreviewNetworkPassthroughTests {
    @Test func aNetworkCamerasJPEGsArePassedThroughUnchanged() throws {
        guard
            let (camera, served) = try NetworkStreamTestServer.startMJPEGKeepingItsFrames(
                ["--size", "640x360", "--fps", "15"])
        else { return }
        defer { camera.stop() }
        #expect(served.count == 64)
        let (server, port) = try PreviewServerTests.startPreview(
            ["--listen", "127.0.0.1:0", "--input", camera.url(), "--stream-fps", "15"])
        defer { server.kill() }
        let parts = PreviewPassthroughCLITests.parts(port: port, count: 8)
        #expect(parts.count == 8, "\(server.errorOutput)")
        #expect(parts.allSatisfy { served.contains($0.body) }, "every part is one of the camera's own JPEGs")
        let stats = try PreviewPassthroughCLITests.stats(port: port)
        #expect(stats["encodedFrames"] as? Int == 0, "\(stats)")
        #expect((stats["passedThroughFrames"] as? Int ?? 0) >= 8, "\(stats)")
    }
}
