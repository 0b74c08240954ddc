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
