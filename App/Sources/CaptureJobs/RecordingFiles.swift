import ArgumentParser
import CaptureKit
import Foundation

/// Names and sizes of the files `cvcam record`, `cvcam watch` and `cvcam serve` write.
package enum RecordingFiles {
    /// "50M" → 52428800; nil when not a positive size.
    package static func parseBytes(_ text: String) -> Int64? {
        let units: [Character: Int64] = ["K": 1 << 10, "M": 1 << 20, "G": 1 << 30]
        var digits = text.uppercased()
        var scale: Int64 = 1
        if let last = digits.last, let unit = units[last] {
            scale = unit
            digits.removeLast()
        }
        guard let value = Int64(digits), value > 0, value <= Int64.max / scale else { return nil }
        return value * scale
    }

    /// The first of `<base>.<ext>`, `<base>-2.<ext>`, … up to `SnapshotStore.maximumCollisionSuffix`
    /// in `folder` that does not exist; nil when every one does.
    package static func freshURL(in folder: URL, base: String, pathExtension ext: String) -> URL? {
        for n in 1...SnapshotStore.maximumCollisionSuffix {
            let url = folder.appendingPathComponent(n == 1 ? "\(base).\(ext)" : "\(base)-\(n).\(ext)")
            if access(url.path, F_OK) != 0 { return url }
        }
        return nil
    }

    /// Takes the first free name of `<base>.<ext>`, `<base>-2.<ext>`, … in `folder` by creating
    /// it, empty, with O_CREAT|O_EXCL: the kernel gives each name to one caller only, so any burst
    /// of callers (threads or processes) gets distinct names. The caller then writes its file over
    /// the empty one (`AtomicFile`, replacing) or removes it (`releaseReservation`). The
    /// corresponding C function is `open(2)`.
    ///
    /// - Throws: `CLIError.message` when every name up to `SnapshotStore.maximumCollisionSuffix`
    ///   is taken, or the folder refuses the file (full, read-only, missing), with advice.
    package static func reserveURL(in folder: URL, base: String, pathExtension ext: String) throws -> URL {
        for n in 1...SnapshotStore.maximumCollisionSuffix {
            let url = folder.appendingPathComponent(n == 1 ? "\(base).\(ext)" : "\(base)-\(n).\(ext)")
            let fd = FilePathBytes.withCString(url.path) { open($0, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644) }
            if fd >= 0 {
                close(fd)
                return url
            }
            guard errno == EEXIST else {
                throw CLIError.message("cannot create \(url.path): \(AtomicFile.advice(for: errno, folder: folder.path))")
            }
        }
        throw CLIError.message("\(folder.path) already holds \(base).\(ext) to -\(SnapshotStore.maximumCollisionSuffix).\(ext)")
    }

    /// Removes a name `reserveURL` took when nothing was written to it (it is still empty): a
    /// file someone else wrote there meanwhile is never removed.
    package static func releaseReservation(_ url: URL) {
        var info = stat()
        if stat(url.path, &info) == 0, info.st_size == 0, info.st_mode & S_IFMT == S_IFREG { unlink(url.path) }
    }

    /// `freshURL` for a movie, guarded (the guard refuses it, should another process take it meanwhile).
    package static func freshGuard(in folder: URL, base: String, input: String?) throws -> OutputFileGuard {
        guard let url = freshURL(in: folder, base: base, pathExtension: "avi") else {
            throw CLIError.message("\(folder.path) already holds \(base).avi to -\(SnapshotStore.maximumCollisionSuffix).avi; choose another --dir.")
        }
        return try OutputFileGuard(target: url, input: input, overwrite: false)
    }

    /// Ways a recording ends that leave a complete file.
    package static let completeEndings: Set<CaptureError.Code> = [
        .maximumDurationReached, .maximumFileSizeReached, .diskSpaceLimitReached, .sessionWasStopped,
    ]
}
