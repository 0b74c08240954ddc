#if canImport(Glibc)
import Glibc
#endif

/// Every error CaptureKit throws or reports: what failed (`code`), a sentence that says what
/// happened and what to do (`message`), and where available the file or device path and the
/// `errno` or library status behind it.
///
/// Modelled on swift-system's `Errno`: a small struct with an extensible set of codes, so
/// callers can `switch` on `code` and print `description`.
public struct CaptureError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure this is.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        // Session state machine (CaptureSession).
        /// `startRunning` while the session is already running.
        public static let sessionAlreadyRunning = Code(rawValue: "sessionAlreadyRunning")
        /// `stopRunning` while the session is not running.
        public static let sessionNotRunning = Code(rawValue: "sessionNotRunning")
        /// `startRunning` with no input added.
        public static let sessionHasNoInputs = Code(rawValue: "sessionHasNoInputs")
        /// `startRunning` inside `beginConfiguration`/`commitConfiguration`.
        public static let sessionIsConfiguring = Code(rawValue: "sessionIsConfiguring")
        /// `commitConfiguration` without a matching `beginConfiguration`.
        public static let unbalancedCommitConfiguration = Code(rawValue: "unbalancedCommitConfiguration")
        /// Adding or removing while running, outside a configuration block.
        public static let configurationRequiresBeginConfiguration = Code(rawValue: "configurationRequiresBeginConfiguration")
        /// `addInput` with an input the session already has (or another session owns).
        public static let inputAlreadyAdded = Code(rawValue: "inputAlreadyAdded")
        /// `addInput` with a second input while one is connected (one video input per session).
        public static let inputLimitReached = Code(rawValue: "inputLimitReached")
        /// `removeInput` with an input the session does not have.
        public static let inputNotInSession = Code(rawValue: "inputNotInSession")
        /// `addOutput` with an output the session already has (or another session owns).
        public static let outputAlreadyAdded = Code(rawValue: "outputAlreadyAdded")
        /// `removeOutput` with an output the session does not have.
        public static let outputNotInSession = Code(rawValue: "outputNotInSession")
        /// A session preset that the input cannot deliver.
        public static let presetNotSupported = Code(rawValue: "presetNotSupported")

        // Devices.
        /// Changing a device setting without `lockForConfiguration`.
        public static let deviceNotLockedForConfiguration = Code(rawValue: "deviceNotLockedForConfiguration")
        /// An `activeFormat` that is not one of the device's `formats`.
        public static let formatNotSupported = Code(rawValue: "formatNotSupported")
        /// A frame duration outside the active format's supported ranges.
        public static let frameDurationNotSupported = Code(rawValue: "frameDurationNotSupported")
        /// The device went away while in use (unplugged: ENODEV). Sessions report an interruption.
        public static let deviceDisconnected = Code(rawValue: "deviceDisconnected")
        /// Another process holds the device (EBUSY).
        public static let deviceBusy = Code(rawValue: "deviceBusy")
        /// This user may not open the device (EACCES): join the `video` group.
        public static let permissionDenied = Code(rawValue: "permissionDenied")
        /// A value outside the range the device reports for a setting.
        public static let valueOutOfRange = Code(rawValue: "valueOutOfRange")
        /// A setting the current mode makes inactive (e.g. exposure duration in auto exposure).
        public static let settingInactive = Code(rawValue: "settingInactive")
        /// A device call failed in a way not covered above (carries errno).
        public static let deviceFailure = Code(rawValue: "deviceFailure")
        /// A setting the device does not have (a control the camera lacks).
        public static let unsupported = Code(rawValue: "unsupported")

        // File and synthetic inputs.
        /// The path does not exist.
        public static let fileNotFound = Code(rawValue: "fileNotFound")
        /// The file exists but cannot be read as video (not a video, no codec, no permission).
        public static let cannotOpenVideo = Code(rawValue: "cannotOpenVideo")
        /// The folder holds no image files.
        public static let noImagesInFolder = Code(rawValue: "noImagesInFolder")
        /// An image file could not be decoded.
        public static let unreadableImage = Code(rawValue: "unreadableImage")
        /// An image's header declares more pixels than `ImageFolderSource.maximumPixels` allows.
        public static let imageTooLarge = Code(rawValue: "imageTooLarge")
        /// A video ended before the frame count its container promised (truncated or corrupt).
        public static let truncatedVideo = Code(rawValue: "truncatedVideo")
        /// A video frame could not be decoded mid-stream.
        public static let decodeFailed = Code(rawValue: "decodeFailed")
        /// A synthetic camera description that cannot be rendered.
        public static let invalidConfiguration = Code(rawValue: "invalidConfiguration")

        // Frames and outputs.
        /// A buffer could not be allocated.
        public static let outOfMemory = Code(rawValue: "outOfMemory")
        /// A pixel format conversion or transform the bridge cannot do.
        public static let conversionFailed = Code(rawValue: "conversionFailed")
        /// Writing a file failed (disk full, permission, …).
        public static let writeFailed = Code(rawValue: "writeFailed")

        // Preview geometry.
        /// A preview geometry that cannot be used: a view or frame size that is not positive, a
        /// rotation other than 0/90/180/270, an unknown gravity name, or a connection/input mismatch.
        public static let invalidPreviewGeometry = Code(rawValue: "invalidPreviewGeometry")

        // Metadata detectors.
        /// No face model could be loaded (neither YuNet nor the Haar cascade): set CVCAM_MODELS
        /// or pass the Models folder.
        public static let faceModelUnavailable = Code(rawValue: "faceModelUnavailable")
        /// A detector call into OpenCV failed.
        public static let detectionFailed = Code(rawValue: "detectionFailed")

        // Photos and movies.
        /// `capturePhoto` with settings already used once: make new settings per capture.
        public static let photoSettingsReused = Code(rawValue: "photoSettingsReused")
        /// `startRecording` while a recording is in progress.
        public static let recordingInProgress = Code(rawValue: "recordingInProgress")
        /// A recording stopped at `maxRecordedDuration`; the file is complete.
        public static let maximumDurationReached = Code(rawValue: "maximumDurationReached")
        /// A recording stopped at `maxRecordedFileSize`; the file is complete.
        public static let maximumFileSizeReached = Code(rawValue: "maximumFileSizeReached")
        /// A recording stopped because free disk space fell to `minFreeDiskSpaceLimit`; the file is complete.
        public static let diskSpaceLimitReached = Code(rawValue: "diskSpaceLimitReached")
        /// A recording stopped because the session stopped; the file is complete.
        public static let sessionWasStopped = Code(rawValue: "sessionWasStopped")

        // Installation.
        /// Only in the shipped layout (built with CVCAM_LEAN_MODULES=1 by Tools/install), where a
        /// part of CaptureKit is loaded on first use from PREFIX/lib/cvcam: it is missing, cannot
        /// be loaded or is from another build. The video module (video files, streams, movies),
        /// the objdetect module (faces, QR location) or the imgcodecs module (image formats beyond
        /// JPEG and PNG). Reinstall with the lib/cvcam folder; a plain SwiftPM build links them in.
        public static let moduleUnavailable = Code(rawValue: "moduleUnavailable")
    }

    /// What kind of failure this is.
    public var code: Code
    /// One sentence: what failed, and what to do about it.
    public var message: String
    /// The file or device involved, when there is one.
    public var path: String?
    /// The `errno` behind the failure, when there is one.
    public var errno: Int32?
    /// The status code of the library behind the failure (OpenCV's `cv::Error::Code`, ZBar's
    /// or zxing-cpp's status, as the shim reports it in `cvb_error.code`), when there is one.
    public var libraryCode: Int32?

    /// Creates an error.
    public init(_ code: Code, _ message: String, path: String? = nil, errno: Int32? = nil, libraryCode: Int32? = nil) {
        self.code = code
        self.message = message
        self.path = path
        self.errno = errno
        self.libraryCode = libraryCode
    }

    public var description: String {
        var text = message
        if let errno, errno != 0 {
            text += " (errno \(errno): \(String(cString: strerror(errno))))"
        }
        return text
    }
}
