import ArgumentParser
import CaptureKit
import Foundation

/// The kinds of files cvcam writes and keeps within limits.
package enum FileKind: String, CaseIterable, Codable, Sendable, Comparable {
    /// `watch` and the daemon's snapshots (with their pre-frames), and the `snapshot` command's photos.
    case snapshots
    /// Event clips (`CaptureClipOutput`).
    case clips
    /// Continuous recordings (`record --dir`, the daemon's `record:` segments).
    case recordings

    package static func < (a: FileKind, b: FileKind) -> Bool { a.rawValue < b.rawValue }
}

/// How long and how much of one kind of file to keep.
///
/// Value type; thread-safe.
package struct RetentionLimits: Equatable, Sendable {
    /// Files older than this many seconds (by modification time) go.
    package var maxAge: Double?
    /// While the files take more bytes than this, the oldest go.
    package var maxBytes: Int64?

    package init(maxAge: Double? = nil, maxBytes: Int64? = nil) {
        self.maxAge = maxAge
        self.maxBytes = maxBytes
    }

    package var isEmpty: Bool { maxAge == nil && maxBytes == nil }

    /// These limits where set, else `defaults`' (a camera's limits over the daemon's).
    package func over(_ defaults: RetentionLimits) -> RetentionLimits {
        RetentionLimits(maxAge: maxAge ?? defaults.maxAge, maxBytes: maxBytes ?? defaults.maxBytes)
    }
}

/// Sizes and durations as people write them in options and the configuration file.
package enum RetentionValue {
    /// Longest `maxAge`: ten years.
    package static let maximumAge: Double = 10 * 366 * 86_400

    /// "30d", "12h", "90m", "45s" or a plain number of seconds → seconds; nil when not a
    /// duration of 1 s to ten years.
    package static func parseDuration(_ text: String) -> Double? {
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 7 * 86_400]
        var digits = text.trimmingCharacters(in: .whitespaces).lowercased()
        var scale = 1.0
        if let last = digits.last, let unit = units[last] {
            scale = unit
            digits.removeLast()
        }
        guard let value = Double(digits), value.isFinite, value > 0 else { return nil }
        let seconds = value * scale
        return (1...maximumAge).contains(seconds) ? seconds : nil
    }

    /// "50M" → bytes (K, M, G, T), nil when not a positive size.
    package static func parseBytes(_ text: String) -> Int64? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.uppercased().hasSuffix("T"), let tebi = RecordingFiles.parseBytes(String(trimmed.dropLast()) + "G") {
            let (v, overflow) = tebi.multipliedReportingOverflow(by: 1024)
            return overflow ? nil : v
        }
        return RecordingFiles.parseBytes(trimmed)
    }

    /// `seconds` as people read it: "30d", "12h", "90s".
    package static func durationText(_ seconds: Double) -> String {
        for (unit, size) in [("d", 86_400.0), ("h", 3600.0), ("m", 60.0)] where seconds >= size && seconds.truncatingRemainder(dividingBy: size) == 0 {
            return "\(Int(seconds / size))\(unit)"
        }
        return seconds == seconds.rounded() ? "\(Int(seconds))s" : String(format: "%.3gs", seconds)
    }
}

/// `--max-age`, `--max-bytes` and `--min-free-space` of `watch` and `record --dir`: limits on
/// the files the command writes (the daemon's `retention:` sections mean the same).
package struct RetentionOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Remove the files this command writes (this camera's, found by their names) once older than this: 30d, 12h, 90m or seconds.",
            valueName: "age"))
    package var maxAge: String?

    @Option(
        help: ArgumentHelp(
            "Keep each kind of file this command writes (snapshots, clips, recordings) under this many bytes (K, M, G, T), oldest removed first.",
            valueName: "size"))
    package var maxBytes: String?

    @Option(
        help: ArgumentHelp("Remove the oldest of these files while the disk has less free space than this (K, M, G, T).", valueName: "size"))
    package var minFreeSpace: String?

    @Option(help: ArgumentHelp("Seconds between retention sweeps (1…3600).", valueName: "seconds"))
    package var retentionInterval: Double = 60

    package init() {}

    package func validate() throws {
        if let maxAge, RetentionValue.parseDuration(maxAge) == nil {
            throw ValidationError("--max-age must be a duration of 1 s to 10 years, as 30d, 12h, 90m or seconds (got '\(maxAge)').")
        }
        for (name, value) in [("--max-bytes", maxBytes), ("--min-free-space", minFreeSpace)] {
            if let value, RetentionValue.parseBytes(value) == nil {
                throw ValidationError("\(name) must be a number of bytes above 0, optionally with K, M, G or T (got '\(value)').")
            }
        }
        try OptionRange.check(retentionInterval, 1...3600, "--retention-interval", unit: " seconds")
    }

    /// Whether any limit was given.
    package var isSet: Bool { maxAge != nil || maxBytes != nil || minFreeSpace != nil }

    /// The per-kind limits the options give.
    package var limits: RetentionLimits {
        RetentionLimits(maxAge: maxAge.flatMap(RetentionValue.parseDuration), maxBytes: maxBytes.flatMap(RetentionValue.parseBytes))
    }

    package var minimumFreeBytes: Int64? { minFreeSpace.flatMap(RetentionValue.parseBytes) }

    /// A keeper of `camera`'s files of each kind in its folder within these limits, reporting
    /// through `printer`; nil when no limit was given.
    package func keeper(camera: String, folders: [(FileKind, String)], printer: EventPrinter) -> RetentionKeeper? {
        guard isSet else { return nil }
        let shelves = folders.map { RetentionShelf(camera: camera, prefix: camera, kind: $0.0, folder: $0.1, limits: limits) }
        return RetentionKeeper(
            policy: RetentionPolicy(shelves: shelves, minFreeSpace: minimumFreeBytes), interval: retentionInterval,
            reporter: PrintingRetentionReporter(printer: printer))
    }
}
