import Foundation
import Synchronization

/// A source of video: a V4L2 camera, a video file, a folder of images or a synthetic camera,
/// like `AVCaptureDevice`.
///
/// Settings (`activeFormat`, frame durations) change only between `lockForConfiguration()`
/// and `unlockForConfiguration()`; changing them without the lock throws
/// `CaptureError.Code.deviceNotLockedForConfiguration`.
///
/// Threading: thread-safe. Settings changed while a session runs take effect the next time the
/// session starts or commits a configuration.
public final class CaptureDevice: Sendable, CustomStringConvertible {
    /// The kind of device (`AVCaptureDevice.DeviceType`).
    public enum DeviceType: String, Sendable, CaseIterable {
        /// A V4L2 camera (USB/UVC webcams, CSI cameras behind a V4L2 driver).
        case external
        /// A video file read through OpenCV's FFmpeg backend.
        case videoFile
        /// A folder of images, or one image, shown at a fixed rate.
        case imageFolder
        /// A generated scene with known ground truth.
        case synthetic
    }

    /// Where a camera faces (`AVCaptureDevice.Position`). V4L2 cannot tell; cameras report
    /// `.unspecified` unless told otherwise.
    public enum Position: String, Sendable, CaseIterable {
        case unspecified, front, back
    }

    /// The kind of media a device delivers.
    public enum MediaType: String, Sendable {
        case video
    }

    /// Width and height in pixels (`CMVideoDimensions`).
    public struct Dimensions: Hashable, Sendable, CustomStringConvertible {
        public var width: Int
        public var height: Int
        public init(width: Int, height: Int) {
            self.width = width
            self.height = height
        }
        /// Number of pixels.
        public var area: Int { width * height }
        public var description: String { "\(width)x\(height)" }
    }

    /// A range of frame rates a format supports (`AVFrameRateRange`).
    public struct FrameRateRange: Hashable, Sendable, CustomStringConvertible {
        /// Shortest frame duration (fastest rate).
        public var minFrameDuration: MediaTime
        /// Longest frame duration (slowest rate).
        public var maxFrameDuration: MediaTime
        public init(minFrameDuration: MediaTime, maxFrameDuration: MediaTime) {
            self.minFrameDuration = minFrameDuration
            self.maxFrameDuration = maxFrameDuration
        }
        /// A range holding a single rate.
        public init(framesPerSecond fps: Double) {
            let d = MediaTime.frameDuration(framesPerSecond: fps)
            self.init(minFrameDuration: d, maxFrameDuration: d)
        }
        /// Fastest rate in frames per second.
        public var maxFrameRate: Double { minFrameDuration.framesPerSecond }
        /// Slowest rate in frames per second.
        public var minFrameRate: Double { maxFrameDuration.framesPerSecond }
        /// Whether `duration` lies in the range.
        public func contains(_ duration: MediaTime) -> Bool {
            duration >= minFrameDuration && duration <= maxFrameDuration
        }
        public var description: String {
            minFrameRate == maxFrameRate ? "\(fmt(maxFrameRate)) fps" : "\(fmt(minFrameRate))-\(fmt(maxFrameRate)) fps"
        }
        private func fmt(_ v: Double) -> String {
            v == v.rounded() ? String(Int(v)) : String(format: "%.3f", v)
        }
    }

    /// One way the device can stream (`AVCaptureDevice.Format`).
    public struct Format: Hashable, Sendable, CustomStringConvertible {
        /// The four-character code of what the device produces ("YUYV", "MJPG", a file's codec).
        public var mediaSubType: String
        /// The layout of the pixel buffers the source hands to the session (compressed formats
        /// are decoded by the source).
        public var pixelFormat: PixelFormat
        /// Frame size.
        public var dimensions: Dimensions
        /// Frame rates the format supports.
        public var videoSupportedFrameRateRanges: [FrameRateRange]

        public init(
            mediaSubType: String, pixelFormat: PixelFormat, dimensions: Dimensions,
            videoSupportedFrameRateRanges: [FrameRateRange]
        ) {
            self.mediaSubType = mediaSubType
            self.pixelFormat = pixelFormat
            self.dimensions = dimensions
            self.videoSupportedFrameRateRanges = videoSupportedFrameRateRanges
        }

        /// The fastest supported rate's frame duration.
        public var minFrameDuration: MediaTime? {
            videoSupportedFrameRateRanges.map(\.minFrameDuration).min()
        }
        /// Whether a frame duration is supported.
        public func supports(frameDuration: MediaTime) -> Bool {
            videoSupportedFrameRateRanges.contains { $0.contains(frameDuration) }
        }

        public var description: String {
            "\(mediaSubType) \(dimensions) @ " + videoSupportedFrameRateRanges.map(\.description).joined(separator: ", ")
        }
    }

    /// A stable identifier (`AVCaptureDevice.uniqueID`): the bus path for cameras, the file
    /// path for files, the description for synthetic cameras.
    public let uniqueID: String
    /// A name for people.
    public let localizedName: String
    /// The kind of device.
    public let deviceType: DeviceType
    /// Where the camera faces.
    public let position: Position
    /// The backend that produces frames.
    public let source: any FrameSource

    private struct Settings {
        var lockCount = 0
        var activeFormat: Format
        var activeVideoMinFrameDuration: MediaTime
        var activeVideoMaxFrameDuration: MediaTime
    }
    private let settings: Mutex<Settings>
    /// The focus and exposure points of interest set through this object (see
    /// `CaptureDevice+PointOfInterest.swift`); nil until set.
    let pointsOfInterest = Mutex(PointsOfInterest())

    /// Creates a device over any frame source (cameras, files, synthetic scenes, test doubles).
    /// The first format becomes active at its fastest rate.
    public init(
        uniqueID: String, localizedName: String, deviceType: DeviceType, position: Position = .unspecified,
        source: any FrameSource
    ) throws(CaptureError) {
        guard let first = source.formats.first, let duration = first.minFrameDuration else {
            throw CaptureError(.invalidConfiguration, "\(localizedName) offers no video format")
        }
        self.uniqueID = uniqueID
        self.localizedName = localizedName
        self.deviceType = deviceType
        self.position = position
        self.source = source
        settings = Mutex(
            Settings(activeFormat: first, activeVideoMinFrameDuration: duration, activeVideoMaxFrameDuration: duration))
    }

    /// Every format the device supports.
    public var formats: [Format] { source.formats }

    /// The format the device streams in. Change it with `setActiveFormat(_:)`.
    public var activeFormat: Format { settings.withLock { $0.activeFormat } }

    /// The active frame duration (one over the frame rate) the device streams at.
    public var activeVideoMinFrameDuration: MediaTime { settings.withLock { $0.activeVideoMinFrameDuration } }

    /// The longest frame duration the device may use (equal to the minimum for fixed-rate sources).
    public var activeVideoMaxFrameDuration: MediaTime { settings.withLock { $0.activeVideoMaxFrameDuration } }

    /// Whether the caller holds the configuration lock.
    public var isLockedForConfiguration: Bool { settings.withLock { $0.lockCount > 0 } }

    /// Takes the configuration lock; calls nest and must be balanced by `unlockForConfiguration()`.
    public func lockForConfiguration() throws(CaptureError) {
        settings.withLock { $0.lockCount += 1 }
    }

    /// Releases the configuration lock.
    public func unlockForConfiguration() {
        settings.withLock { $0.lockCount = max(0, $0.lockCount - 1) }
    }

    /// Makes `format` active and resets the frame durations to its fastest rate
    /// (`AVCaptureDevice.activeFormat`'s setter). Requires the configuration lock.
    public func setActiveFormat(_ format: Format) throws(CaptureError) {
        try settings.withLock { (s: inout Settings) throws(CaptureError) in
            try requireLock(s)
            guard formats.contains(format) else {
                throw CaptureError(
                    .formatNotSupported,
                    "\(localizedName) does not offer \(format); choose one of `formats`")
            }
            s.activeFormat = format
            let duration = format.minFrameDuration ?? s.activeVideoMinFrameDuration
            s.activeVideoMinFrameDuration = duration
            s.activeVideoMaxFrameDuration = duration
        }
    }

    /// Sets the frame duration the device streams at (`activeVideoMinFrameDuration`).
    /// Requires the configuration lock and a duration the active format supports.
    public func setActiveVideoMinFrameDuration(_ duration: MediaTime) throws(CaptureError) {
        try settings.withLock { (s: inout Settings) throws(CaptureError) in
            try requireLock(s)
            guard s.activeFormat.supports(frameDuration: duration) else {
                throw CaptureError(
                    .frameDurationNotSupported,
                    "\(localizedName) cannot stream \(s.activeFormat.dimensions) at \(duration.framesPerSecond) fps; supported: \(s.activeFormat.videoSupportedFrameRateRanges.map(\.description).joined(separator: ", "))")
            }
            s.activeVideoMinFrameDuration = duration
            if s.activeVideoMaxFrameDuration < duration { s.activeVideoMaxFrameDuration = duration }
        }
    }

    /// Sets the longest frame duration (`activeVideoMaxFrameDuration`). Requires the lock.
    public func setActiveVideoMaxFrameDuration(_ duration: MediaTime) throws(CaptureError) {
        try settings.withLock { (s: inout Settings) throws(CaptureError) in
            try requireLock(s)
            guard s.activeFormat.supports(frameDuration: duration) else {
                throw CaptureError(
                    .frameDurationNotSupported,
                    "\(localizedName) cannot stream \(s.activeFormat.dimensions) at \(duration.framesPerSecond) fps")
            }
            s.activeVideoMaxFrameDuration = max(duration, s.activeVideoMinFrameDuration)
        }
    }

    private func requireLock(_ s: Settings) throws(CaptureError) {
        guard s.lockCount > 0 else {
            throw CaptureError(
                .deviceNotLockedForConfiguration,
                "\(localizedName): call lockForConfiguration() before changing device settings")
        }
    }

    /// Applies a session's chosen format without the caller holding the lock (the session
    /// takes it on the user's behalf, as AVFoundation does for presets).
    func applySessionFormat(_ format: Format) {
        settings.withLock { s in
            guard s.activeFormat != format else { return }
            s.activeFormat = format
            if let d = format.minFrameDuration {
                s.activeVideoMinFrameDuration = d
                s.activeVideoMaxFrameDuration = d
            }
        }
    }

    public var description: String { "\(localizedName) [\(deviceType.rawValue)] \(uniqueID)" }
}
