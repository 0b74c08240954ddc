import CLibV4L2
import CV4L2
#if canImport(Glibc)
import Glibc
#endif

/// The one seam through which the V4L2 backend reaches the operating system: every `open`,
/// `ioctl`, `mmap`, `munmap`, `poll`, `access` and `close` the backend makes goes through one of
/// these function values, so tests can observe the calls and inject failures while the real
/// path (`live`) still runs against a real or emulated device.
///
/// Each function returns what the C call returns and leaves `errno` set on failure, exactly as
/// the C call does; the backend's `V4L2Error` turns that into a typed error.
///
/// Threading: the values are `@Sendable`; `live` is safe to call from any thread.
public struct V4L2SystemCalls: Sendable {
    /// Opens a device node read-write and non-blocking and hands it to libv4l2 without format
    /// conversion. The corresponding C functions are `open(2)` and `v4l2_fd_open`.
    public var openDevice: @Sendable (_ path: String) -> Int32
    /// The corresponding C function is `v4l2_close`.
    public var close: @Sendable (_ fd: Int32) -> Int32
    /// The corresponding C function is `v4l2_ioctl`.
    public var ioctl: @Sendable (_ fd: Int32, _ request: UInt, _ argument: UnsafeMutableRawPointer) -> Int32
    /// Maps a buffer shared and read-write. The corresponding C function is `v4l2_mmap`.
    public var mmap: @Sendable (_ fd: Int32, _ length: Int, _ offset: Int64) -> UnsafeMutableRawPointer?
    /// The corresponding C function is `v4l2_munmap`.
    public var munmap: @Sendable (_ address: UnsafeMutableRawPointer, _ length: Int) -> Int32
    /// Waits for one descriptor. The corresponding C function is `poll(2)`; returns its result
    /// and the descriptor's `revents`.
    public var poll: @Sendable (_ fd: Int32, _ events: Int16, _ timeoutMilliseconds: Int32) -> (Int32, Int16)
    /// The corresponding C function is `access(2)`.
    public var access: @Sendable (_ path: String, _ mode: Int32) -> Int32
    /// Lists a directory's entry names (for `/dev`). The corresponding C functions are
    /// `opendir`, `readdir` and `closedir`; nil when the directory cannot be read.
    public var listDirectory: @Sendable (_ path: String) -> [String]?

    /// Creates a seam from function values (tests wrap `live`'s to observe or fail calls).
    public init(
        openDevice: @escaping @Sendable (String) -> Int32,
        close: @escaping @Sendable (Int32) -> Int32,
        ioctl: @escaping @Sendable (Int32, UInt, UnsafeMutableRawPointer) -> Int32,
        mmap: @escaping @Sendable (Int32, Int, Int64) -> UnsafeMutableRawPointer?,
        munmap: @escaping @Sendable (UnsafeMutableRawPointer, Int) -> Int32,
        poll: @escaping @Sendable (Int32, Int16, Int32) -> (Int32, Int16),
        access: @escaping @Sendable (String, Int32) -> Int32,
        listDirectory: @escaping @Sendable (String) -> [String]?
    ) {
        self.openDevice = openDevice
        self.close = close
        self.ioctl = ioctl
        self.mmap = mmap
        self.munmap = munmap
        self.poll = poll
        self.access = access
        self.listDirectory = listDirectory
    }

    /// The real calls: libc for open/poll/access, libv4l2 for the rest.
    public static let live = V4L2SystemCalls(
        openDevice: { path in
            let fd = Glibc.open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)
            guard fd >= 0 else { return -1 }
            let wrapped = cv4l2_v4l2_fd_open_passthrough(fd)
            if wrapped < 0 {
                let saved = errno
                _ = Glibc.close(fd)
                errno = saved
            }
            return wrapped
        },
        close: { v4l2_close($0) },
        ioctl: { cv4l2_v4l2_ioctl($0, $1, $2) },
        mmap: { fd, length, offset in
            let address = v4l2_mmap(nil, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, offset)
            return address == MAP_FAILED ? nil : address
        },
        munmap: { v4l2_munmap($0, $1) },
        poll: { fd, events, timeout in
            var entry = pollfd(fd: fd, events: events, revents: 0)
            let result = Glibc.poll(&entry, 1, timeout)
            return (result, entry.revents)
        },
        access: { Glibc.access($0, $1) },
        listDirectory: { path in
            guard let dir = opendir(path) else { return nil }
            defer { closedir(dir) }
            var names: [String] = []
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
                }
                names.append(name)
            }
            return names
        }
    )
}
