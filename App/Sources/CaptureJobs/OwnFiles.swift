import CaptureKit
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The names cvcam gives its files, so that retention and the preview touch only those: in a
/// folder shared with anything else, a file is cvcam's only when its whole name is one cvcam
/// writes for that camera. Every pattern starts `<prefix>-<yyyyMMdd-HHmmss.mmm>` (the camera's
/// name and `LocalTimestamp.fileNameStamp`) and ends as its writer names files:
///
/// | kind | files (one item) | writer |
/// |---|---|---|
/// | snapshots | `P-T-face3.jpg`, `P-T-face3-5-again.jpg`, `P-T-every-face3.jpg`, `P-T-requested.jpg`, each with `-2`… collision suffixes, their `-pre-NN.jpg` frames and a `.json` sidecar | `SnapshotStore.fileName`, the daemon's `snapshot` command |
/// | clips | `P-T-clip.avi`, `P-T-clip-2.avi` | `CaptureClipOutput.fileName` |
/// | recordings | `P-T.avi`, `P-T-2.avi` | `SegmentRecorder`, `record --dir` |
///
/// Names starting with a dot (`AtomicFile`'s temporary files, `record`'s lock files) never match.
///
/// Threading: thread-safe (immutable).
package struct OwnFileNames: Sendable {
    package let kind: FileKind
    package let prefix: String

    /// The names of `prefix`'s files of `kind`.
    package init(kind: FileKind, prefix: String) {
        self.kind = kind
        self.prefix = prefix
    }

    /// The item `name` belongs to (a snapshot's stem: its photo, pre-frames and sidecar go
    /// together), or nil when `name` is not one of these files. Matched by hand, byte by byte,
    /// rather than with a Regex (not Sendable): the prefix is compared as text, never as a pattern.
    package func item(of name: String) -> String? {
        let bytes = Array(name.utf8)
        let head = Array((prefix + "-").utf8)
        guard bytes.count > head.count, bytes.starts(with: head) else { return nil }
        // The stamp: yyyyMMdd-HHmmss.mmm.
        let shape = Array("00000000-000000.000".utf8)
        var i = head.count
        guard bytes.count >= i + shape.count else { return nil }
        for s in shape {
            let b = bytes[i]
            guard s == UInt8(ascii: "0") ? Self.isDigit(b) : b == s else { return nil }
            i += 1
        }
        let rest = String(decoding: bytes[i...], as: UTF8.self)
        let stem: String
        let ending: String
        switch kind {
        case .recordings:
            guard rest.hasSuffix(".avi") else { return nil }
            (stem, ending) = (String(rest.dropLast(4)), "")
        case .clips:
            guard let ext = [".avi", ".json"].first(where: rest.hasSuffix) else { return nil }
            let body = String(rest.dropLast(ext.count))
            guard body.hasPrefix("-clip") else { return nil }
            (stem, ending) = (body, String(body.dropFirst(5)))
        case .snapshots:
            var body: Substring
            if rest.hasSuffix(".json") {
                body = rest.dropLast(5)
            } else if rest.hasSuffix(".jpg") {
                body = rest.dropLast(4)
                // `-pre-NN`: a frame written before the photo.
                let tail = Array(body.utf8.suffix(7))
                if tail.count == 7, tail.starts(with: Array("-pre-".utf8)), Self.isDigit(tail[5]), Self.isDigit(tail[6]) {
                    body = body.dropLast(7)
                }
            } else {
                return nil
            }
            guard let reason = Self.snapshotReasonEnd(body) else { return nil }
            (stem, ending) = (String(body), reason)
        }
        // What is left after the kind's fixed part: nothing, or a `-2`…`-999` collision suffix.
        if kind == .recordings {
            guard stem.isEmpty || Self.isCollision(stem) else { return nil }
        } else {
            guard ending.isEmpty || Self.isCollision(ending) else { return nil }
        }
        return String(decoding: bytes[..<i], as: UTF8.self) + stem
    }

    /// After a snapshot's stamp: `-face3`, `-face3-5`, `-face3-again`, `-every-face3`,
    /// `-requested`; returns what follows the reason (a collision suffix, or nothing), or nil.
    private static func snapshotReasonEnd(_ body: Substring) -> String? {
        if body.hasPrefix("-requested") { return String(body.dropFirst("-requested".count)) }
        var rest = body
        if rest.hasPrefix("-every-") { rest = rest.dropFirst(6) }
        guard rest.hasPrefix("-face") else { return nil }
        rest = rest.dropFirst(5)
        // Face IDs joined by `-`, then perhaps `-again`, then perhaps a collision suffix; digits
        // and dashes after `face` are all IDs or suffix, which both leave the name cvcam's.
        var tail = String(rest)
        if let again = tail.range(of: "-again") {
            guard tail[..<again.lowerBound].allSatisfy({ $0.isASCII && ($0.isNumber || $0 == "-") }) else { return nil }
            tail = String(tail[again.upperBound...])
            return tail
        }
        guard tail.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == "-") }) else { return nil }
        return ""
    }

    private static func isDigit(_ b: UInt8) -> Bool { b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") }

    /// `-N` with 1 to 3 digits.
    private static func isCollision(_ text: String) -> Bool {
        let b = Array(text.utf8)
        return (2...4).contains(b.count) && b[0] == UInt8(ascii: "-") && b.dropFirst().allSatisfy(isDigit)
    }

    /// The first file of an item, the one a page shows and links (the photo, the clip).
    package func isMainFile(_ name: String) -> Bool {
        switch kind {
        case .snapshots: name.hasSuffix(".jpg") && !name.contains("-pre-")
        case .clips, .recordings: name.hasSuffix(".avi")
        }
    }
}

/// One of cvcam's files as found on disk.
package struct OwnFile: Sendable, Equatable {
    package var name: String
    /// `st_size`.
    package var bytes: Int64
    /// Bytes the file system gives back when it goes (`st_blocks` × 512).
    package var allocated: Int64
    /// `st_mtime`.
    package var modified: Date
    /// `st_dev`/`st_ino`: the file deletion must find under the name.
    package var device: UInt64
    package var inode: UInt64
}

/// A file with its companions (a snapshot and its pre-frames): what retention removes whole.
package struct OwnItem: Sendable, Equatable {
    package var key: String
    package var files: [OwnFile]
    /// The newest modification time of its files.
    package var modified: Date { files.map(\.modified).max() ?? .distantPast }
    package var bytes: Int64 { files.reduce(0) { $0 + $1.bytes } }
    package var allocated: Int64 { files.reduce(0) { $0 + $1.allocated } }

    /// Oldest first; ties by name, so the order is the same on every sweep.
    package static func olderFirst(_ a: OwnItem, _ b: OwnItem) -> Bool {
        a.modified != b.modified ? a.modified < b.modified : a.key < b.key
    }
}

/// One folder opened for finding and removing cvcam's files in it, safely:
///
/// - The folder is opened once (`open(O_DIRECTORY)`), and every later step works relative to
///   that descriptor (`fstatat`, `unlinkat`), so renaming or replacing the folder meanwhile
///   cannot redirect a removal elsewhere.
/// - Entries are looked at with `AT_SYMLINK_NOFOLLOW` and only regular files count: a symbolic
///   link is never followed, never removed, and neither is a sub-folder (no recursion).
/// - A file is removed only if the name still holds the very file (device and inode) that was
///   found, so a file that replaced it meanwhile stays.
///
/// Threading: one thread at a time; close with `close()` (or let it go).
package final class OwnFolder {
    package let path: String
    private var fd: Int32

    /// Opens `path`; nil with the errno when it cannot be opened as a folder. The corresponding
    /// C function is `open(2)` with O_DIRECTORY.
    package static func open(_ path: String) -> Result<OwnFolder, FileErrorCode> {
        let fd = FilePathBytes.withCString(path) { Glibc.open($0, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        guard fd >= 0 else { return .failure(FileErrorCode(errno)) }
        return .success(OwnFolder(path: path, fd: fd))
    }

    private init(path: String, fd: Int32) {
        self.path = path
        self.fd = fd
    }

    deinit { close() }

    package func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    /// The file system the folder is on (`st_dev`), to group folders by volume.
    package var volume: UInt64? {
        var st = Glibc.stat()
        guard fd >= 0, fstat(fd, &st) == 0 else { return nil }
        return UInt64(st.st_dev)
    }

    /// Bytes free to this user on the folder's file system (`fstatvfs(3)`: f_bavail × f_frsize).
    package var freeBytes: Int64? {
        var s = statvfs()
        guard fd >= 0, fstatvfs(fd, &s) == 0 else { return nil }
        return Int64(s.f_bavail) * Int64(s.f_frsize)
    }

    /// The items of `names` in the folder, oldest first. The corresponding C functions are
    /// `fdopendir(3)`, `readdir(3)` and `fstatat(2)` with AT_SYMLINK_NOFOLLOW.
    package func items(_ names: OwnFileNames) -> Result<[OwnItem], FileErrorCode> {
        var found: [String: [OwnFile]] = [:]
        let copy = dup(fd)
        guard copy >= 0, let dir = fdopendir(copy) else {
            let e = errno
            if copy >= 0 { Glibc.close(copy) }
            return .failure(FileErrorCode(e))
        }
        defer { closedir(dir) }
        rewinddir(dir)
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            guard let key = names.item(of: name), let file = stat(name) else { continue }
            found[key, default: []].append(file)
        }
        return .success(found.map { OwnItem(key: $0.key, files: $0.value.sorted { $0.name < $1.name }) }.sorted(by: OwnItem.olderFirst))
    }

    /// `name` in the folder when it is a regular file (a link is not followed), else nil.
    package func stat(_ name: String) -> OwnFile? {
        var st = Glibc.stat()
        guard fd >= 0, fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0, st.st_mode & S_IFMT == S_IFREG else { return nil }
        return OwnFile(
            name: name, bytes: Int64(st.st_size), allocated: Int64(st.st_blocks) * 512,
            modified: Date(timeIntervalSince1970: Double(st.st_mtim.tv_sec) + Double(st.st_mtim.tv_nsec) / 1e9),
            device: UInt64(st.st_dev), inode: UInt64(st.st_ino))
    }

    /// Removes `file` if the name still holds that very file; the errno otherwise (ENOENT: it
    /// is gone already; ESTALE: another file has the name now). The corresponding C function
    /// is `unlinkat(2)`.
    package func remove(_ file: OwnFile) -> Result<Void, FileErrorCode> {
        guard let now = stat(file.name) else { return .failure(FileErrorCode(ENOENT)) }
        guard now.device == file.device, now.inode == file.inode else { return .failure(FileErrorCode(ESTALE)) }
        return unlinkat(fd, file.name, 0) == 0 ? .success(()) : .failure(FileErrorCode(errno))
    }

    /// Opens `name` in the folder for reading when it is a regular file (a link is refused:
    /// O_NOFOLLOW). The caller owns the descriptor. The corresponding C function is `openat(2)`.
    package func openForReading(_ name: String) -> Int32? {
        guard fd >= 0 else { return nil }
        let file = openat(fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard file >= 0 else { return nil }
        var st = Glibc.stat()
        guard fstat(file, &st) == 0, st.st_mode & S_IFMT == S_IFREG else {
            Glibc.close(file)
            return nil
        }
        return file
    }
}

/// An errno from a file operation, with its text.
package struct FileErrorCode: Error, Equatable, Sendable, CustomStringConvertible {
    package var errno: Int32
    package init(_ errno: Int32) { self.errno = errno }
    package var description: String { String(cString: strerror(errno)) }
}
