#if canImport(Glibc)
import Glibc
#endif

/// A failed V4L2 system call: which operation, on which device, and the `errno` it left
/// (swift-system's `Errno` shape: a small struct, never a bare `Int32`).
///
/// Converted to a `CaptureError` with the code a user can act on (`captureError`).
/// Value type; thread-safe.
public struct V4L2Error: Error, Sendable, Hashable, CustomStringConvertible {
    /// The call that failed, named after its ioctl or C function.
    public struct Operation: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The C function `open`.
        public static let open = Operation(rawValue: "open")
        /// `ioctl(VIDIOC_QUERYCAP)`.
        public static let queryCapabilities = Operation(rawValue: "VIDIOC_QUERYCAP")
        /// `ioctl(VIDIOC_ENUM_FMT)`.
        public static let enumerateFormats = Operation(rawValue: "VIDIOC_ENUM_FMT")
        /// `ioctl(VIDIOC_ENUM_FRAMESIZES)`.
        public static let enumerateFrameSizes = Operation(rawValue: "VIDIOC_ENUM_FRAMESIZES")
        /// `ioctl(VIDIOC_ENUM_FRAMEINTERVALS)`.
        public static let enumerateFrameIntervals = Operation(rawValue: "VIDIOC_ENUM_FRAMEINTERVALS")
        /// `ioctl(VIDIOC_G_FMT)`.
        public static let getFormat = Operation(rawValue: "VIDIOC_G_FMT")
        /// `ioctl(VIDIOC_S_FMT)`.
        public static let setFormat = Operation(rawValue: "VIDIOC_S_FMT")
        /// `ioctl(VIDIOC_G_PARM)`.
        public static let getParameters = Operation(rawValue: "VIDIOC_G_PARM")
        /// `ioctl(VIDIOC_S_PARM)`.
        public static let setParameters = Operation(rawValue: "VIDIOC_S_PARM")
        /// `ioctl(VIDIOC_REQBUFS)`.
        public static let requestBuffers = Operation(rawValue: "VIDIOC_REQBUFS")
        /// `ioctl(VIDIOC_QUERYBUF)`.
        public static let queryBuffer = Operation(rawValue: "VIDIOC_QUERYBUF")
        /// The C function `mmap`.
        public static let mapBuffer = Operation(rawValue: "mmap")
        /// `ioctl(VIDIOC_QBUF)`.
        public static let queueBuffer = Operation(rawValue: "VIDIOC_QBUF")
        /// `ioctl(VIDIOC_DQBUF)`.
        public static let dequeueBuffer = Operation(rawValue: "VIDIOC_DQBUF")
        /// `ioctl(VIDIOC_STREAMON)`.
        public static let streamOn = Operation(rawValue: "VIDIOC_STREAMON")
        /// `ioctl(VIDIOC_STREAMOFF)`.
        public static let streamOff = Operation(rawValue: "VIDIOC_STREAMOFF")
        /// The C function `poll`.
        public static let poll = Operation(rawValue: "poll")
        /// `ioctl(VIDIOC_QUERY_EXT_CTRL)`.
        public static let queryControl = Operation(rawValue: "VIDIOC_QUERY_EXT_CTRL")
        /// `ioctl(VIDIOC_QUERYMENU)`.
        public static let queryMenu = Operation(rawValue: "VIDIOC_QUERYMENU")
        /// `ioctl(VIDIOC_G_CTRL)`.
        public static let getControl = Operation(rawValue: "VIDIOC_G_CTRL")
        /// `ioctl(VIDIOC_S_CTRL)`.
        public static let setControl = Operation(rawValue: "VIDIOC_S_CTRL")
        /// `ioctl(VIDIOC_G_EXT_CTRLS)`.
        public static let getExtendedControls = Operation(rawValue: "VIDIOC_G_EXT_CTRLS")
        /// `ioctl(VIDIOC_S_EXT_CTRLS)`.
        public static let setExtendedControls = Operation(rawValue: "VIDIOC_S_EXT_CTRLS")
    }

    /// The call that failed.
    public var operation: Operation
    /// The `errno` it left.
    public var errno: Int32
    /// The device node.
    public var path: String

    /// Creates an error (`V4L2Error(.dequeueBuffer, errno: EAGAIN, path: "/dev/video0")`).
    public init(_ operation: Operation, errno: Int32, path: String) {
        self.operation = operation
        self.errno = errno
        self.path = path
    }

    public var description: String {
        "\(operation) on \(path) failed: \(String(cString: strerror(errno))) (errno \(errno))"
    }

    /// Whether the device has gone away (unplugged, or the driver unbound).
    public var isDisconnection: Bool { errno == ENODEV || errno == ENXIO || errno == ENOENT }

    /// The `CaptureError` a user sees: a code to switch on and a sentence that says what to do.
    public var captureError: CaptureError {
        let code: CaptureError.Code
        let advice: String
        switch errno {
        case EACCES where operation == .setControl || operation == .setExtendedControls:
            code = .settingInactive
            advice = "the device refused the setting in its current mode; switch the automatic mode off first"
        case EACCES, EPERM:
            code = .permissionDenied
            advice = "permission denied: this user may not use \(path); add the user to the `video` group (sudo usermod -aG video $USER) and log in again"
        case EBUSY:
            code = .deviceBusy
            advice = "the camera is busy: \(path) is in use by another process; close the other application (see `fuser \(path)`) and try again"
        case _ where isDisconnection:
            code = .deviceDisconnected
            advice = "\(path) is gone (unplugged?); reconnect the camera"
        case ERANGE:
            code = .valueOutOfRange
            advice = "the device rejected the value as out of range"
        default:
            code = .deviceFailure
            advice = "the camera driver reported an error; try reconnecting the camera"
        }
        return CaptureError(code, "\(operation) on \(path) failed: \(advice)", path: path, errno: errno)
    }
}
