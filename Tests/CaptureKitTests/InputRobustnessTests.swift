import CaptureKit
import CaptureKitTesting
import Foundation
import Testing

/// Inputs that used to crash, hang or exhaust memory (issue #17, classes 2, 3, 4, 7 and 8).
@Suite struct InputRobustnessTests {
    /// A background far larger than the frame: its decoded image is a temporary, and a raw view
    /// of it used to outlive it (a segfault on 6000x6000, where the allocator unmaps at once).
    @Test func bigBackgroundImageIsScaledWithoutTouchingFreedMemory() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("big.png")
        try ImageFile.write(try PixelBuffer(width: 6000, height: 6000, pixelFormat: .bgr), to: path)
        let scene = SyntheticScene(size: .init(width: 64, height: 64), frameCount: 2, background: .image(path: path))
        let source = try SyntheticCameraSource(scene: scene, pacing: .asFastAsPossible)
        try source.open(format: source.formats[0], frameDuration: MediaTime(value: 1, timescale: 30))
        defer { source.close() }
        var frames = 0
        while let frame = try source.nextFrame(isCancelled: { false }) {
            #expect(frame.pixelBuffer.width == 64 && frame.pixelBuffer.height == 64)
            frames += 1
        }
        #expect(frames == 2)
    }

    func error(_ body: () throws -> Void) -> CaptureError? {
        do { try body() } catch let error as CaptureError { return error } catch { return nil }
        return nil
    }

    /// A 45-byte PNG whose IHDR declares 32000x32000 (3 GB as BGR): refused from its header.
    @Test func imageDeclaringTooManyPixelsIsRefusedBeforeDecoding() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("huge.png")
        try Data(TestImageFiles.pngHeaderOnly(width: 32000, height: 32000)).write(to: URL(fileURLWithPath: path))
        let e = error { _ = try ImageFolderSource.decode(path) }
        #expect(e?.code == .imageTooLarge)
        #expect(e?.message.contains("32000x32000") == true && e?.message.contains("CVCAM_MAX_IMAGE_PIXELS") == true)
        #expect(error { _ = try CaptureDevice(imagesAtPath: path) }?.code == .imageTooLarge)
        // Under the limit the decoder judges it (here: no image data).
        #expect(error { _ = try ImageFolderSource.decode(path, maximumPixels: 2_000_000_000) }?.code == .unreadableImage)
    }

    /// A 450-byte JPEG found by `Tools/fuzz` (fuzz-image): stray bytes after its APP0 segment,
    /// which libjpeg skips, made the header walk give up, so its 12128x14895 frame (180 MP)
    /// was decoded unchecked, 2.4 GB at peak.
    @Test func jpegWithStrayBytesBeforeItsFrameHeaderIsRefusedBeforeDecoding() throws {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../Fuzz/fuzz-image/oom-stray-bytes-before-sof.jpg").standardizedFileURL.path
        let e = error { _ = try ImageFolderSource.decode(path) }
        #expect(e?.code == .imageTooLarge)
        #expect(e?.message.contains("12128x14895") == true)
    }

    @Test(arguments: ["png", "jpg", "bmp", "webp", "ppm"])
    func headerSizeMatchesTheDecodedSize(ext: String) throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("a.\(ext)")
        try ImageFile.write(try PixelBuffer(width: 37, height: 21, pixelFormat: .bgr), to: path)
        if ext != "png" && ext != "jpg" {
            // ImageFile writes PNG or JPEG only: convert with OpenCV's writer via a round trip.
            let png = dir.path("a.png")
            try ImageFile.write(try PixelBuffer(width: 37, height: 21, pixelFormat: .bgr), to: png)
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
            p.arguments = ["-v", "error", "-y", "-i", png, path]
            try p.run()
            p.waitUntilExit()
        }
        #expect(error { _ = try ImageFolderSource.decode(path, maximumPixels: 37 * 21 - 1) }?.code == .imageTooLarge)
        #expect(try ImageFolderSource.decode(path, maximumPixels: 37 * 21).width == 37)
    }

    /// A FIFO with a writer used to block FFmpeg's second open forever.
    @Test func fifoIsRefusedNotOpened() throws {
        let dir = try TemporaryDirectory()
        for name in ["pipe.mp4", "pipe.png"] {
            let path = dir.path(name)
            #expect(mkfifo(path, 0o600) == 0)
            let writer = open(path, O_RDWR)  // a writer, without blocking
            defer { close(writer) }
            let started = Date()
            let e = error {
                _ = try name.hasSuffix(".mp4") ? CaptureDevice(videoFileAtPath: path) : CaptureDevice(imagesAtPath: path)
            }
            #expect(e?.message.contains("FIFO") == true, "\(String(describing: e))")
            #expect(Date().timeIntervalSince(started) < 2)
        }
    }

    @Test func symbolicLinkLoopSaysSo() throws {
        let dir = try TemporaryDirectory()
        #expect(symlink(dir.path("b.png"), dir.path("a.png")) == 0)
        #expect(symlink(dir.path("a.png"), dir.path("b.png")) == 0)
        for e in [error { _ = try CaptureDevice(imagesAtPath: dir.path("a.png")) },
                  error { _ = try CaptureDevice(videoFileAtPath: dir.path("a.png")) }] {
            #expect(e?.errno == ELOOP)
            #expect(e?.message.contains("symbolic links") == true)
        }
    }

    /// Root reads anything, so these run only for other users.
    @Test(.enabled(if: getuid() != 0)) func unreadableImageAndFolderSayPermissionDenied() throws {
        let dir = try TemporaryDirectory()
        let image = dir.path("a.png")
        try ImageFile.write(try PixelBuffer(width: 8, height: 8, pixelFormat: .bgr), to: image)
        chmod(image, 0)
        let e = error { _ = try ImageFolderSource.decode(image) }
        #expect(e?.code == .permissionDenied && e?.errno == EACCES)
        chmod(image, 0o600)
        chmod(dir.url.path, 0o300)
        defer { chmod(dir.url.path, 0o700) }
        let f = error { _ = try CaptureDevice(imagesAtPath: dir.url.path) }
        #expect(f?.code == .permissionDenied && f?.errno == EACCES)
    }
}
