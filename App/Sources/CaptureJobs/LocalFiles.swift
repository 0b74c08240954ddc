import Foundation

/// Making folders and reading small text files (a configuration, a password) with errors in
/// cvcam's words: the POSIX calls directly, so a failure carries errno, which Foundation's
/// `FileManager.createDirectory` and `String(contentsOfFile:)` often lose on Linux ("error 512").
///
/// Threading: pure functions over the file system; thread-safe.
package enum LocalFiles {
    /// Makes the folder at `path` and any missing parents (`mkdir -p`). The corresponding C
    /// functions are `stat(2)` and `mkdir(2)`.
    ///
    /// - Parameter what: what the folder is for the user, e.g. "the snapshot folder".
    /// - Throws: `CLIError.message` "cannot create `what` `path`: …", naming the level that
    ///   failed when it is not `path` itself (a file where a folder should be, say).
    package static func makeFolder(_ path: String, what: String) throws(CLIError) {
        func fail(_ why: String) -> CLIError { .message("cannot create \(what) \(path): \(why)") }
        guard !path.isEmpty else { throw fail("the path is empty") }
        var prefix = path.hasPrefix("/") ? "/" : ""
        let levels = path.split(separator: "/", omittingEmptySubsequences: true)
        for (index, level) in levels.enumerated() {
            prefix += level
            defer { prefix += "/" }
            var info = stat()
            if stat(prefix, &info) == 0 {
                guard info.st_mode & S_IFMT == S_IFDIR else {
                    throw fail(index == levels.count - 1 ? "it exists and is \(kind(info.st_mode))" : "\(prefix) is \(kind(info.st_mode)), not a folder")
                }
                continue
            }
            if mkdir(prefix, 0o755) != 0, errno != EEXIST {
                let reason = SystemErrorText.reason(errno: errno)
                throw fail(index == levels.count - 1 ? reason : "\(reason) (making \(prefix))")
            }
        }
    }

    /// The text of the regular file at `path`, which must be UTF-8. Only a regular file is read:
    /// a FIFO would block until someone writes to it, and a device such as `/dev/zero` never
    /// ends. The corresponding C functions are `stat(2)`, `open(2)`, `fstat(2)` and `read(2)`.
    ///
    /// - Parameter maximumBytes: a longer file is refused (nil: no limit).
    /// - Throws: `CLIError.message` saying what is wrong, in words to follow "cannot read X: ".
    package static func readText(_ path: String, maximumBytes: Int? = nil) throws(CLIError) -> String {
        var info = stat()
        guard stat(path, &info) == 0 else { throw .message(SystemErrorText.reason(errno: errno)) }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw .message("it is \(kind(info.st_mode)), not a regular file")
        }
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw .message(SystemErrorText.reason(errno: errno)) }
        defer { close(fd) }
        // Checked again on what was opened: the name may have been replaced in between.
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { throw .message("it is not a regular file") }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw .message(SystemErrorText.reason(errno: errno))
            }
            if count == 0 { break }
            bytes += chunk[..<count]
            if let maximumBytes, bytes.count > maximumBytes {
                throw .message("it is larger than \(maximumBytes) bytes")
            }
        }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw .message("the text is not valid UTF-8") }
        return text
    }

    /// What kind of file `mode` says a path is, in words: "a folder", "a FIFO (named pipe)"…
    package static func kind(_ mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFREG: "a file"
        case S_IFDIR: "a folder"
        case S_IFIFO: "a FIFO (named pipe)"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFSOCK: "a socket"
        case S_IFLNK: "a symbolic link"
        default: "not a regular file"
        }
    }
}
