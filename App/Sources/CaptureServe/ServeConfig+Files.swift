import CaptureJobs
import CaptureKit
import Foundation
import Yams

extension ServeConfig {
    /// A camera's event clips (`clips:`): `ClipOptions` arguments (the keys of `watch --clips`,
    /// camelCased: `dir`, `preRoll`, `postRoll`, `maxClip`, `quality`, `maxSize`) and what
    /// starts a clip (`triggers`: `faces`, `codes`, `motion`, any of them).
    package struct Clips: Equatable, Sendable {
        package var arguments: [String]
        package var faces: Bool
        package var codes: Bool
        package var motion: Bool

        /// Creates the value from each of its properties.
        package init(arguments: [String], faces: Bool = true, codes: Bool = false, motion: Bool = false) {
            self.arguments = arguments
            self.faces = faces
            self.codes = codes
            self.motion = motion
        }

        package var options: ClipOptions { try! ClipOptions.parse(arguments) }  // checked when loaded
        package var dir: String { options.dir ?? "" }
    }

    /// `retention:`, daemon-wide. Per kind, `maxAge` is every camera's default (a camera's own
    /// `retention:` overrides it) and `maxBytes` is the total of all cameras' files of that
    /// kind; `minFreeSpace` holds on every file system a camera writes to; sweeps run every
    /// `interval` seconds (and at once when free space runs low).
    package struct Retention: Equatable, Sendable {
        package var interval = 60.0
        package var minFreeSpace: Int64?
        package var limits: [FileKind: RetentionLimits] = [:]

        /// Creates the value from each of its properties.
        package init(interval: Double = 60.0, minFreeSpace: Int64? = nil, limits: [FileKind: RetentionLimits] = [:]) {
            self.interval = interval
            self.minFreeSpace = minFreeSpace
            self.limits = limits
        }
    }
}

extension ConfigReader {
    package static let clipKeys = ["dir", "preRoll", "postRoll", "maxClip", "quality", "maxSize", "triggers"]
    /// `ClipOptions`' options by key (the rest are `--` + the key in kebab case).
    private static let clipOptions = ["dir": "clips", "quality": "clip-quality", "maxSize": "clip-max-size"]

    /// What `triggers:` accepts.
    package static let clipTriggers = ["faces", "codes", "motion"]

    /// `clips:` of a camera. `hasFaces`, `hasCodes` and `hasMotion` say what the camera detects,
    /// so a trigger it cannot have is a problem, and the default trigger is faces (codes for a
    /// camera without faces).
    package mutating func readClips(_ v: Node, _ label: String, hasFaces: Bool, hasCodes: Bool, hasMotion: Bool) -> ServeConfig.Clips? {
        let path = label + ": clips"
        guard let m = mapping(v, path, known: Self.clipKeys) else { return nil }
        var args: [String] = []
        var keys: [String: String] = [:]
        var triggers: [String]?
        for (key, value, _) in m {
            if key == "triggers" {
                let items: [Node] = if case .sequence(let list) = value { Array(list) } else { [value] }
                triggers = items.map { $0.string ?? "?" }
                for (item, node) in zip(triggers!, items) where !Self.clipTriggers.contains(item) {
                    problem(path + ".triggers", node, "must be a list of faces, codes and motion, e.g. [faces, codes] (got '\(TerminalText.escaped(item))')")
                }
                continue
            }
            guard case .scalar = value, let s = value.string else {
                problem(path + "." + key, value, "must be a single value")
                continue
            }
            let option = Self.clipOptions[key] ?? Self.kebab(key)
            args += ["--" + option, s]
            keys[option] = key
        }
        guard m.contains(where: { $0.key == "dir" }) else {
            problem(path + ".dir", v, "missing: the folder clips are written to")
            return nil
        }
        guard parsed(ClipOptions.self, args, keys: keys, section: "clips.", label: label, node: v, pairs: m) != nil else { return nil }
        let chosen = triggers ?? [hasFaces || !hasCodes ? "faces" : "codes"]
        let result = ServeConfig.Clips(
            arguments: args, faces: chosen.contains("faces"), codes: chosen.contains("codes"), motion: chosen.contains("motion"))
        if result.faces && !hasFaces {
            problem(path + ".triggers", v, "faces start clips only on a camera that looks for faces: add `faces: {}`, or use triggers: [codes]")
        }
        if result.codes && !hasCodes {
            problem(path + ".triggers", v, "codes start clips only on a camera that reads codes: add `codes: [qr]`")
        }
        if result.motion && !hasMotion {
            problem(path + ".triggers", v, "motion starts clips only on a camera that detects motion: remove `motion: false`")
        }
        if triggers?.isEmpty == true {
            problem(path + ".triggers", v, "is empty: name what starts a clip (faces, codes, motion), or leave triggers out for faces")
        }
        return result
    }

    /// `retention:` — daemon-wide (`global`: also `interval` and `minFreeSpace`) or a camera's.
    package mutating func readRetention(_ v: Node, _ path: String, global: Bool) -> ServeConfig.Retention? {
        let kinds = FileKind.allCases.map(\.rawValue)
        guard let m = mapping(v, path, known: (global ? ["interval", "minFreeSpace"] : []) + kinds) else { return nil }
        var result = ServeConfig.Retention()
        for (key, value, _) in m {
            let keyPath = join(path, key)
            switch key {
            case "interval": result.interval = number(value, keyPath, 1...3600) ?? result.interval
            case "minFreeSpace": result.minFreeSpace = size(value, keyPath)
            default:
                guard let kind = FileKind(rawValue: key), let limits = mapping(value, keyPath, known: ["maxAge", "maxBytes"]) else { continue }
                var read = RetentionLimits()
                for (limit, node, _) in limits {
                    if limit == "maxAge" {
                        guard case .scalar = node, let text = node.string, let seconds = RetentionValue.parseDuration(text) else {
                            problem(keyPath + ".maxAge", node, "must be a duration of 1 s to 10 years: 30d, 12h, 90m or seconds (got '\(TerminalText.escaped(node.string ?? "?"))')")
                            continue
                        }
                        read.maxAge = seconds
                    } else {
                        read.maxBytes = size(node, keyPath + ".maxBytes")
                    }
                }
                result.limits[kind] = read
            }
        }
        return result
    }

    /// A size in bytes with K, M, G or T.
    private mutating func size(_ node: Node, _ path: String) -> Int64? {
        guard case .scalar = node, let text = node.string, let bytes = RetentionValue.parseBytes(text) else {
            problem(path, node, "must be a size in bytes, optionally with K, M, G or T (e.g. 20G; got '\(TerminalText.escaped(node.string ?? "?"))')")
            return nil
        }
        return bytes
    }

    /// A camera's retention for kinds it does not write is a mistake worth saying.
    package mutating func checkRetention(_ retention: ServeConfig.Retention?, camera label: String, node: Node, writes: Set<FileKind>) {
        guard let retention else { return }
        for kind in retention.limits.keys.sorted() where !writes.contains(kind) {
            let section = kind == .recordings ? "record" : kind.rawValue
            problem(label + ": retention." + kind.rawValue, node, "this camera writes no \(kind.rawValue) (it has no `\(section):` section)")
        }
    }
}
