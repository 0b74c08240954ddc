import CaptureKit
import CaptureVision
import Foundation
import Synchronization

/// A live camera stand-in: numbered 64×48 gray frames at a fixed interval, with sequence
/// numbers it can skip (frames lost before the session saw them) and one scripted
/// `deviceDisconnected` failure, for testing how a session delivers, drops and recovers.
///
/// Threading: `FrameSource`'s rule (open, nextFrame and close on the capture thread only);
/// `openCount` may be read from any thread.
public final class ScriptedLiveSource: FrameSource, @unchecked Sendable {
    // @unchecked: `next`, `delivered`, `failed` are touched only on the capture thread.
    public let formats = [
        CaptureDevice.Format(
            mediaSubType: "GREY", pixelFormat: .gray, dimensions: .init(width: 64, height: 48),
            videoSupportedFrameRateRanges: [.init(framesPerSecond: 30)])
    ]
    public let isLive = true
    public let pacing = FramePacing.realTime
    /// Frames before the source ends; nil for endless.
    public let frames: Int?
    /// Seconds between frames.
    public let interval: Double
    /// Sequence numbers never delivered.
    public let skipping: Set<UInt64>
    /// Throws `deviceDisconnected` once, after this many frames.
    public let disconnectAfter: Int?
    /// How many times `open` was called (a reconnect opens again).
    public let openCount = Mutex(0)
    private var next: UInt64 = 0
    private var delivered = 0
    private var failed = false

    /// A source of `frames` frames (nil: endless) `interval` seconds apart.
    public init(frames: Int?, interval: Double, skipping: Set<UInt64> = [], disconnectAfter: Int? = nil) {
        self.frames = frames
        self.interval = interval
        self.skipping = skipping
        self.disconnectAfter = disconnectAfter
    }

    public func open(format: CaptureDevice.Format, frameDuration: MediaTime) throws(CaptureError) {
        openCount.withLock { $0 += 1 }
    }

    public func nextFrame(isCancelled: @Sendable () -> Bool) throws(CaptureError) -> SourceFrame? {
        if isCancelled() { return nil }
        if let frames, next >= UInt64(frames) { return nil }
        if let limit = disconnectAfter, delivered == limit, !failed {
            failed = true
            throw CaptureError(.deviceDisconnected, "scripted unplug", errno: ENODEV)
        }
        Thread.sleep(forTimeInterval: interval)
        while skipping.contains(next) { next += 1 }
        let buffer = try PixelBuffer(width: 64, height: 48, pixelFormat: .gray)
        defer {
            next += 1
            delivered += 1
        }
        return SourceFrame(
            pixelBuffer: buffer, presentationTimeStamp: MediaTime(seconds: Double(next) / 30), sequenceNumber: next)
    }

    public func close() {}
}

/// Plays a finite synthetic scene `cycles` times as one camera: frame times and sequence
/// numbers continue across repetitions, so the session sees one long stream (soak runs).
///
/// Threading: `FrameSource`'s rule (open, nextFrame and close on the capture thread only).
public final class LoopingSceneSource: FrameSource, @unchecked Sendable {
    // @unchecked: `cycle`, `format` and `duration` are touched only by the capture thread.
    /// The source playing one repetition.
    public let inner: SyntheticCameraSource
    /// How many times the scene plays.
    public let cycles: Int
    public var formats: [CaptureDevice.Format] { inner.formats }
    public var isLive: Bool { inner.isLive }
    public var pacing: FramePacing { inner.pacing }
    private var cycle = 0
    private var format: CaptureDevice.Format?
    private var duration = MediaTime(value: 1, timescale: 30)

    /// A source playing `scene` (which must have a `frameCount`) `cycles` times in real time.
    public init(scene: SyntheticScene, cycles: Int) throws(CaptureError) {
        inner = try SyntheticCameraSource(scene: scene, pacing: .realTime)
        self.cycles = cycles
    }

    /// Frames in one repetition.
    public var framesPerCycle: Int { inner.scene.frameCount ?? 0 }

    public func open(format: CaptureDevice.Format, frameDuration: MediaTime) throws(CaptureError) {
        cycle = 0
        self.format = format
        duration = frameDuration
        try inner.open(format: format, frameDuration: frameDuration)
    }

    public func nextFrame(isCancelled: @Sendable () -> Bool) throws(CaptureError) -> SourceFrame? {
        while cycle < cycles {
            if var frame = try inner.nextFrame(isCancelled: isCancelled) {
                let offset = Int64(cycle * framesPerCycle)
                frame.presentationTimeStamp = duration.multiplied(by: offset + Int64(frame.sequenceNumber))
                frame.sequenceNumber += UInt64(offset)
                return frame
            }
            cycle += 1
            guard cycle < cycles, let format else { return nil }
            inner.close()
            try inner.open(format: format, frameDuration: duration)
        }
        return nil
    }

    public func close() { inner.close() }
}

/// An MJPEG camera stand-in: one JPEG file delivered again and again as a camera streaming
/// MJPEG delivers its frames, the decoded BGR pixels with the file's bytes as
/// `SourceFrame.jpegData`, at a fixed interval. For testing what consumers do with a camera's
/// own JPEG without a V4L2 device.
///
/// Threading: `FrameSource`'s rule (open, nextFrame and close on the capture thread only).
public final class JPEGCameraSource: FrameSource, @unchecked Sendable {
    // @unchecked: `next` is touched only on the capture thread; the rest is immutable.
    public let formats: [CaptureDevice.Format]
    public let isLive = true
    public let pacing = FramePacing.realTime
    /// The JPEG every frame carries.
    public let jpegData: Data
    /// Its decode (`Imaging.decode`, as the V4L2 source decodes MJPEG), shared by every frame.
    public let pixelBuffer: PixelBuffer
    /// Seconds between frames.
    public let interval: Double
    private var next: UInt64 = 0

    /// A source repeating the JPEG file at `path`, one frame every `interval` seconds.
    ///
    /// - Throws: what `ImageFolderSource.decode` throws for an unreadable file, or
    ///   `.unreadableImage` when the file is not a JPEG.
    public init(jpegAt path: String, interval: Double = 1.0 / 30) throws(CaptureError) {
        let size = try ImageFolderSource.decode(path)
        guard let data = FileManager.default.contents(atPath: path), data.starts(with: [0xFF, 0xD8]) else {
            throw CaptureError(.unreadableImage, "\(path) is not a JPEG file (no FFD8 marker at its start); give a .jpg", path: path)
        }
        let pixels = try PixelBuffer(width: size.width, height: size.height, pixelFormat: .bgr)
        try Imaging.decode(data, into: pixels, "decoding \(path)")
        jpegData = data
        pixelBuffer = pixels
        self.interval = interval
        formats = [
            CaptureDevice.Format(
                mediaSubType: "MJPG", pixelFormat: .bgr, dimensions: .init(width: size.width, height: size.height),
                videoSupportedFrameRateRanges: [.init(framesPerSecond: 1 / interval)])
        ]
    }

    public func open(format: CaptureDevice.Format, frameDuration: MediaTime) throws(CaptureError) { next = 0 }

    public func nextFrame(isCancelled: @Sendable () -> Bool) throws(CaptureError) -> SourceFrame? {
        if isCancelled() { return nil }
        Thread.sleep(forTimeInterval: interval)
        defer { next += 1 }
        return SourceFrame(
            pixelBuffer: pixelBuffer, presentationTimeStamp: MediaTime(seconds: Double(next) * interval), sequenceNumber: next,
            jpegData: jpegData)
    }

    public func close() {}
}
