import Foundation
#if canImport(Glibc)
    import Glibc
#endif

/// A small tmpfs the test mounts, fills, frees and turns read-only: the real full disk and the
/// real read-only file system, not an injected errno. Needs root and a working `mount`; `make`
/// returns nil after printing why when either is missing, so the test skips rather than fails.
package final class TemporaryFileSystem: @unchecked Sendable {
    // @unchecked: the mount point is immutable; the test that owns the file system uses it alone.
    package let path: String
    private var mounted = true

    /// Mounts a tmpfs of `megabytes` on a new temporary folder, or nil (printing why) when it cannot.
    package static func make(megabytes: Int) -> TemporaryFileSystem? {
        guard getuid() == 0 else {
            print("skipping: mounting a tmpfs needs root")
            return nil
        }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("cvcam-tmpfs-\(UUID().uuidString)").path
        guard (try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)) != nil else {
            print("skipping: cannot make \(path)")
            return nil
        }
        if let why = run(["-t", "tmpfs", "-o", "size=\(megabytes)m", "tmpfs", path]) {
            print("skipping: cannot mount a tmpfs (\(why))")
            rmdir(path)
            return nil
        }
        return TemporaryFileSystem(path: path)
    }

    private init(path: String) { self.path = path }

    deinit { unmount() }

    /// `mount -o remount,ro` or `rw`; nil when it worked, else what mount said.
    @discardableResult
    package func remount(readOnly: Bool) -> String? {
        Self.run(["-o", "remount,\(readOnly ? "ro" : "rw")", path])
    }

    /// Writes zeros to `name` until the file system is full; returns the file's path.
    @discardableResult
    package func fill(_ name: String = "filler") -> String {
        let file = path + "/" + name
        let fd = open(file, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        guard fd >= 0 else { return file }
        defer { close(fd) }
        let chunk = [UInt8](repeating: 0, count: 64 << 10)
        var size = chunk.count
        // Shrinking chunks, so the last few bytes are taken too.
        while size > 0 {
            let n = chunk.withUnsafeBytes { write(fd, $0.baseAddress, size) }
            if n < size { size /= 2 }
        }
        return file
    }

    /// Bytes free on the file system.
    package var freeBytes: Int64 {
        var s = statvfs()
        guard statvfs(path, &s) == 0 else { return 0 }
        return Int64(s.f_bavail) * Int64(s.f_frsize)
    }

    package func unmount() {
        guard mounted else { return }
        mounted = false
        _ = Self.run([path], tool: "/bin/umount") ?? Self.run(["-l", path], tool: "/bin/umount")
        rmdir(path)
    }

    /// Runs `mount` (or `tool`); nil on success, else its output.
    private static func run(_ arguments: [String], tool: String = "/bin/mount") -> String? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = out
        do { try process.run() } catch { return "\(tool): \(error)" }
        let said = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return process.terminationStatus == 0 ? nil : "\(tool) \(arguments.joined(separator: " ")): \(said)"
    }
}
