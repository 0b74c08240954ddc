import Foundation

/// Writes `bytes` to a fresh file in the temporary folder, runs `body` with its path, then
/// removes it. The readers under test take paths, so every fuzz input goes through a file.
public func withTemporaryFile<R>(_ bytes: UnsafeRawBufferPointer, suffix: String, _ body: (String) throws -> R) rethrows -> R {
    let path = NSTemporaryDirectory() + "cvcam-fuzz-\(getpid())\(suffix)"
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    precondition(fd >= 0, "cannot create \(path)")
    if let base = bytes.baseAddress { precondition(write(fd, base, bytes.count) == bytes.count, "short write to \(path)") }
    close(fd)
    defer { unlink(path) }
    return try body(path)
}

/// A file of the repository (models, fixtures), found from this source file.
public func repositoryPath(_ relative: String) -> URL {
    URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../../../\(relative)").standardizedFileURL
}
