import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The file system calls CaptureKit's file writers make, so tests can observe them and inject
/// failures (a full disk, a read-only folder) while the real path stays the default.
///
/// Each call returns its result or the `errno` it failed with. Calls that can be interrupted
/// retry on EINTR in the real implementation.
///
/// Threading: implementations must be thread-safe.
protocol FileSystemCalls: Sendable {
    /// `open(2)`.
    func open(_ path: String, flags: Int32, mode: mode_t) -> Result<Int32, FileErrno>
    /// `write(2)`: bytes written (possibly fewer than asked).
    func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Result<Int, FileErrno>
    /// `pwrite(2)`.
    func pwrite(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, offset: Int64) -> Result<Int, FileErrno>
    /// `fsync(2)`.
    func fsync(_ fd: Int32) -> Result<Void, FileErrno>
    /// `close(2)`.
    func close(_ fd: Int32) -> Result<Void, FileErrno>
    /// `rename(2)`.
    func rename(_ from: String, _ to: String) -> Result<Void, FileErrno>
    /// `unlink(2)`.
    func unlink(_ path: String) -> Result<Void, FileErrno>
    /// `link(2)`: fails with EEXIST instead of replacing `to`.
    func link(_ from: String, _ to: String) -> Result<Void, FileErrno>
    /// Bytes available to this user on the file system holding `path` (`statvfs(3)`: f_bavail × f_frsize).
    func availableBytes(at path: String) -> Result<Int64, FileErrno>
}

extension FileSystemCalls {
    func link(_ from: String, _ to: String) -> Result<Void, FileErrno> {
        FilePathBytes.withCString(from) { f in FilePathBytes.withCString(to) { Glibc.link(f, $0) } } == 0 ? .success(()) : .failure(.current)
    }
}

/// An `errno` value as an error, for the `FileSystemCalls` seam.
struct FileErrno: Error, Equatable {
    var rawValue: Int32
    /// The current thread's errno.
    static var current: FileErrno { FileErrno(rawValue: Glibc.errno) }
}

/// The real system calls (Glibc), with paths as the bytes they carry (`FilePathBytes`).
struct SystemFileCalls: FileSystemCalls {
    func open(_ path: String, flags: Int32, mode: mode_t) -> Result<Int32, FileErrno> {
        retrying { FilePathBytes.withCString(path) { Glibc.open($0, flags, mode) } }.map { Int32($0) }
    }
    func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Result<Int, FileErrno> {
        retrying { Glibc.write(fd, bytes.baseAddress, bytes.count) }
    }
    func pwrite(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, offset: Int64) -> Result<Int, FileErrno> {
        retrying { Glibc.pwrite(fd, bytes.baseAddress, bytes.count, off_t(offset)) }
    }
    func fsync(_ fd: Int32) -> Result<Void, FileErrno> {
        retrying { Int(Glibc.fsync(fd)) }.map { _ in () }
    }
    func close(_ fd: Int32) -> Result<Void, FileErrno> {
        // Linux releases the descriptor even when close fails with EINTR: never retry it.
        Glibc.close(fd) == 0 ? .success(()) : .failure(.current)
    }
    func rename(_ from: String, _ to: String) -> Result<Void, FileErrno> {
        FilePathBytes.withCString(from) { f in FilePathBytes.withCString(to) { Glibc.rename(f, $0) } } == 0 ? .success(()) : .failure(.current)
    }
    func unlink(_ path: String) -> Result<Void, FileErrno> {
        FilePathBytes.withCString(path) { Glibc.unlink($0) } == 0 ? .success(()) : .failure(.current)
    }
    func availableBytes(at path: String) -> Result<Int64, FileErrno> {
        var s = statvfs()
        guard FilePathBytes.withCString(path, { statvfs($0, &s) }) == 0 else { return .failure(.current) }
        return .success(Int64(s.f_bavail) * Int64(s.f_frsize))
    }

    private func retrying<T: BinaryInteger>(_ call: () -> T) -> Result<Int, FileErrno> {
        while true {
            let r = call()
            if r >= 0 { return .success(Int(r)) }
            let e = FileErrno.current
            if e.rawValue != EINTR { return .failure(e) }
        }
    }
}

/// Writes whole files atomically: the one place CaptureKit does so (photos, snapshots,
/// sidecars).
///
/// The bytes go to a temporary file in the destination's folder, which is fsynced, renamed over
/// the final name, and the folder is fsynced so the rename itself survives a power cut. A crash,
/// a kill or a full disk at any point leaves either the old file or the complete new one under
/// the final name, never a partial one; the temporary file is removed on failure.
///
/// Threading: thread-safe (no shared state; concurrent writers use distinct temporary names).
public enum AtomicFile {
    /// Writes `data` to `url` atomically. The corresponding C functions are `open(2)`,
    /// `write(2)`, `fsync(2)`, `rename(2)` and `fsync(2)` on the folder.
    ///
    /// - Throws: `.writeFailed` naming the file, with errno: ENOSPC (disk full), EACCES or
    ///   EROFS (folder not writable), ENOENT (folder missing), EIO.
    ///
    /// With `replacing` false an existing file is never replaced: the new one is put in place
    /// with `link(2)` (which fails if the name exists) instead of `rename(2)`, and the write
    /// throws `.writeFailed` with EEXIST.
    public static func write(_ data: Data, to url: URL, replacing: Bool = true) throws(CaptureError) {
        try write(data, to: url, replacing: replacing, calls: SystemFileCalls())
    }

    /// The testable form: the same steps through an injected `FileSystemCalls`.
    static func write(_ data: Data, to url: URL, replacing: Bool = true, calls: any FileSystemCalls) throws(CaptureError) {
        let path = url.path
        let folder = url.deletingLastPathComponent().path
        let temporary = folder + "/." + url.lastPathComponent + ".\(getpid()).\(UInt32.random(in: 0...UInt32.max)).tmp"

        func fail(_ step: String, _ e: FileErrno) -> CaptureError {
            CaptureError(.writeFailed, "\(step) \(path) failed: \(advice(for: e.rawValue, folder: folder))", path: path, errno: e.rawValue)
        }

        let fd: Int32
        switch calls.open(temporary, flags: O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode: 0o644) {
        case .success(let f): fd = f
        case .failure(let e): throw fail("creating a temporary file for", e)
        }
        var written = 0
        var failure: CaptureError?
        data.withUnsafeBytes { raw in
            while written < raw.count {
                let chunk = UnsafeRawBufferPointer(rebasing: raw[written...])
                switch calls.write(fd, chunk) {
                case .success(let n) where n > 0: written += n
                case .success: failure = fail("writing", FileErrno(rawValue: EIO)); return
                case .failure(let e): failure = fail("writing", e); return
                }
            }
        }
        if failure == nil, case .failure(let e) = calls.fsync(fd) { failure = fail("flushing", e) }
        if case .failure(let e) = calls.close(fd), failure == nil { failure = fail("closing", e) }
        if failure == nil, replacing, case .failure(let e) = calls.rename(temporary, path) { failure = fail("renaming into", e) }
        if failure == nil, !replacing {
            switch calls.link(temporary, path) {
            case .success: _ = calls.unlink(temporary)
            case .failure(let e) where e.rawValue == EEXIST:
                failure = CaptureError(.writeFailed, "\(path) exists and was not replaced", path: path, errno: EEXIST)
            case .failure(let e): failure = fail("linking into", e)
            }
        }
        if let failure {
            _ = calls.unlink(temporary)
            throw failure
        }
        try syncFolder(folder, calls: calls, path: path)
    }

    /// Makes a rename or a new file in `folder` durable (`open(O_DIRECTORY)` + `fsync(2)`).
    static func syncFolder(_ folder: String, calls: any FileSystemCalls, path: String) throws(CaptureError) {
        guard case .success(let dfd) = calls.open(folder, flags: O_RDONLY | O_DIRECTORY | O_CLOEXEC, mode: 0) else {
            return  // some file systems refuse to open folders; the file itself is already synced
        }
        defer { _ = calls.close(dfd) }
        if case .failure(let e) = calls.fsync(dfd), e.rawValue != EINVAL {
            throw CaptureError(
                .writeFailed, "flushing the folder of \(path) failed: \(advice(for: e.rawValue, folder: folder))",
                path: path, errno: e.rawValue)
        }
    }

    /// What to tell a user about a failed write.
    public static func advice(for errno: Int32, folder: String) -> String {
        switch errno {
        case ENOSPC, EDQUOT: "the disk holding \(folder) is full; free space or choose another folder"
        case EACCES, EPERM: "\(folder) is not writable by this user; choose another folder or change its permissions"
        case EROFS: "\(folder) is on a read-only file system; choose another folder"
        case ENOENT, ENOTDIR: "\(folder) does not exist; create it first"
        default: String(cString: strerror(errno))
        }
    }
}
