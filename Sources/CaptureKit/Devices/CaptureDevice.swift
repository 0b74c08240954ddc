import Foundation
import Logging
import Synchronization

/// A source of video: a V4L2 camera, a video file, a folder of images or a synthetic camera,
/// like `AVCaptureDevice`.
///
/// Settings (`activeFormat`, frame durations) change only between `lockForConfiguration()`
/// and `unlockForConfiguration()`; changing them without the lock throws
/// `CaptureError.Code.deviceNotLockedForConfiguration`.
///
/// As in AVFoundation the settings are also settable properties (`device.activeFormat = f`,
/// `device.focusMode = .autoFocus`, `device.focusPointOfInterest = p`, …). Their misuse stops the
/// program as AVFoundation raises (no lock, a value the device does not support: check the
/// `is…Supported` methods and `formats` first); a camera that refuses a change at run time is
/// reported as a `.warning` event of every session using the device, and logged on
/// `cvcam.device`. The `set…` methods are the throwing forms.
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
    /// The sessions using this device, each told of a setting the camera refused
    /// (`reportSettingFailure`), by session.
    let settingFailureObservers = Mutex<[ObjectIdentifier: @Sendable (CaptureError) -> Void]>([:])
    private static let logger = Logger(label: "cvcam.device")

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

    /// The format the device streams in (`activeFormat`).
    ///
    /// Setting works as `setActiveFormat(_:)`, without `try`: setting without
    /// `lockForConfiguration()` or a format not in `formats` stops the program, as AVFoundation
    /// raises.
    public var activeFormat: Format {
        get { settings.withLock { $0.activeFormat } }
        set { trapOnMisuse("activeFormat") { () throws(CaptureError) in try setActiveFormat(newValue) } }
    }

    /// The active frame duration (one over the frame rate) the device streams at.
    ///
    /// Setting works as `setActiveVideoMinFrameDuration(_:)`, without `try`: setting without
    /// `lockForConfiguration()` or a duration the active format does not support stops the
    /// program, as AVFoundation raises.
    public var activeVideoMinFrameDuration: MediaTime {
        get { settings.withLock { $0.activeVideoMinFrameDuration } }
        set {
            trapOnMisuse("activeVideoMinFrameDuration") { () throws(CaptureError) in
                try setActiveVideoMinFrameDuration(newValue)
            }
        }
    }

    /// The longest frame duration the device may use (equal to the minimum for fixed-rate sources).
    ///
    /// Setting works as `setActiveVideoMaxFrameDuration(_:)`, without `try`, and stops the
    /// program on misuse, as `activeVideoMinFrameDuration`.
    public var activeVideoMaxFrameDuration: MediaTime {
        get { settings.withLock { $0.activeVideoMaxFrameDuration } }
        set {
            trapOnMisuse("activeVideoMaxFrameDuration") { () throws(CaptureError) in
                try setActiveVideoMaxFrameDuration(newValue)
            }
        }
    }

    /// Runs a setting whose every failure is a misuse (no I/O): stops the program with its message.
    private func trapOnMisuse(_ property: String, _ body: () throws(CaptureError) -> Void) {
        do { try body() } catch { preconditionFailure("\(property): \(error.message)") }
    }

    /// Runs the throwing form of a property setter (`device.focusMode = …`). A misuse the app
    /// could have checked stops the program, as AVFoundation raises: no configuration lock, a
    /// value out of range, or a setting the device does not support while it still answers
    /// queries. A camera that refuses the change or has gone (unplugged between the app's check
    /// and the call) is a run-time failure: reported, never a trap (`reportSettingFailure`).
    func applySetting(_ property: String, _ body: () throws(CaptureError) -> Void) {
        precondition(isLockedForConfiguration, "\(property): call lockForConfiguration() first")
        do {
            try body()
        } catch {
            let misuse = [.unsupported, .valueOutOfRange, .deviceNotLockedForConfiguration].contains(error.code)
            if misuse && answersControlQueries {
                preconditionFailure("\(property): \(error.message) (check the is…Supported properties first)")
            }
            reportSettingFailure(error)
        }
    }

    /// Whether the device answers control queries now: not a camera (its controls are known not
    /// to exist), or a camera that lists its controls (one that has gone does not).
    private var answersControlQueries: Bool {
        source.capabilities == nil || (try? controlDescriptions()) != nil
    }

    /// A setting made through a property that the camera refused at run time (an ioctl error):
    /// the sessions using this device get a `.warning` event, and it is logged. Any thread.
    func reportSettingFailure(_ error: CaptureError) {
        Self.logger.warning("\(localizedName): a setting failed: \(error)")
        for observer in settingFailureObservers.withLock({ Array($0.values) }) { observer(error) }
    }

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
