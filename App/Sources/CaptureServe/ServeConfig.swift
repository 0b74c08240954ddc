import ArgumentParser
import CaptureJobs
import CaptureKit
import CaptureMQTT
import CapturePreview
import Foundation
import Yams

/// `cvcam serve`'s configuration file (YAML, read with Yams): the broker and the cameras.
///
/// Each camera's keys are the options of the commands it stands for, camelCased (`minScore` is
/// `watch --min-score`), and are checked by those commands' own parsers, so a value means in
/// the file what it means on the command line; a problem is reported with the file's line, the
/// camera and the key (`ServeConfigError`), never with the option's name.
///
/// Value type; thread-safe. `Camera` is `Equatable` so a reload can tell which cameras changed.
package struct ServeConfig: Equatable, Sendable {
    package struct MQTT: Equatable, Sendable {
        package var broker: String
        /// The file's `clientID`, else `ServeConfig.defaultClientID`: unique per host, topic
        /// prefix and configuration file, so two daemons on one box never take each other's.
        package var clientID: String
        package var username: String?
        /// Read from `passwordFile` or the variable `passwordEnv` names; never printed.
        package var password: String?
        package var caFile: String?
        package var certFile: String?
        package var keyFile: String?
        package var keepAlive: Int = 30
        package var topicPrefix = "cvcam"
        package var maxQueuedMessages = 10_000
        package var maxQueuedBytes = 64 << 20
        package var spool: String?
        package var maxSpoolBytes = 1 << 30
        /// Home Assistant's discovery prefix; nil: no discovery messages.
        package var discoveryPrefix: String?

        /// Creates the value from each of its properties.
        package init(broker: String, clientID: String, username: String? = nil, password: String? = nil, caFile: String? = nil, certFile: String? = nil, keyFile: String? = nil, keepAlive: Int = 30, topicPrefix: String = "cvcam", maxQueuedMessages: Int = 10_000, maxQueuedBytes: Int = 64 << 20, spool: String? = nil, maxSpoolBytes: Int = 1 << 30, discoveryPrefix: String? = nil) {
            self.broker = broker
            self.clientID = clientID
            self.username = username
            self.password = password
            self.caFile = caFile
            self.certFile = certFile
            self.keyFile = keyFile
            self.keepAlive = keepAlive
            self.topicPrefix = topicPrefix
            self.maxQueuedMessages = maxQueuedMessages
            self.maxQueuedBytes = maxQueuedBytes
            self.spool = spool
            self.maxSpoolBytes = maxSpoolBytes
            self.discoveryPrefix = discoveryPrefix
        }
    }

    package struct Faces: Equatable, Sendable {
        /// `FaceOptions` arguments (`--face-detection`, `--face-scan-interval`, `--models`).
        package var arguments: [String]
        package var updateInterval = 1.0

        /// Creates the value from each of its properties.
        package init(arguments: [String], updateInterval: Double = 1.0) {
            self.arguments = arguments
            self.updateInterval = updateInterval
        }
    }

    package struct Codes: Equatable, Sendable {
        package var types: CodeTypeSelection
        package var repeatInterval = 2.0

        /// Creates the value from each of its properties.
        package init(types: CodeTypeSelection, repeatInterval: Double = 2.0) {
            self.types = types
            self.repeatInterval = repeatInterval
        }
    }

    package struct Record: Equatable, Sendable {
        package var dir: String
        /// Seconds of video per file; a new file follows.
        package var segment = 600.0
        package var quality = 80

        /// Creates the value from each of its properties.
        package init(dir: String, segment: Double = 600.0, quality: Int = 80) {
            self.dir = dir
            self.segment = segment
            self.quality = quality
        }
    }

    /// How many commands a camera takes on its `set` topic (a token bucket): `burst` at once,
    /// then `perSecond` on average. Each command over the limit is refused and answered on the
    /// camera's `error` topic, so no publisher can make it write photos without end.
    package struct CommandLimit: Equatable, Sendable {
        package var perSecond = 1.0
        package var burst = 10

        /// Creates the value from each of its properties.
        package init(perSecond: Double = 1.0, burst: Int = 10) {
            self.perSecond = perSecond
            self.burst = burst
        }
    }

    package struct Camera: Equatable, Sendable {
        package var name: String
        /// The name Home Assistant shows (default: `name`).
        package var displayName: String
        /// `InputOptions` arguments: the input and how it is shaped.
        package var inputArguments: [String]
        package var faces: Faces?
        package var codes: Codes?
        /// `watch` arguments: the folder and the snapshot rules.
        package var snapshotArguments: [String]?
        package var record: Record?
        /// `commands:`, the rate limit of the camera's `set` topic.
        package var commandLimit = CommandLimit()
        /// `MotionOptions` arguments (without `--motion`); nil: motion detection off
        /// (`motion: false`). On with the defaults when the camera says nothing.
        package var motionArguments: [String]?
        /// Event clips (`ServeConfig+Files.swift`).
        package var clips: Clips?
        /// The camera's own limits per kind (over the daemon's `retention:` defaults).
        package var retention: [FileKind: RetentionLimits] = [:]

        package var inputOptions: InputOptions { try! InputOptions.parse(inputArguments) }  // checked when loaded
        package var faceOptions: FaceOptions? { faces.map { try! FaceOptions.parse($0.arguments) } }
        package var snapshotOptions: SnapshotOptions? { snapshotArguments.map { try! SnapshotOptions.parse($0) } }
        /// The metadata output's motion setting (`.disabled` for `motion: false`).
        package var motionDetection: CaptureMetadataOutput.MotionDetection {
            guard let motionArguments else { return .disabled }
            return (try! MotionOptions.parse(motionArguments)).settings(enabled: true)  // checked when loaded
        }

        /// Creates the value from each of its properties.
        package init(
            name: String, displayName: String, inputArguments: [String], faces: Faces? = nil, codes: Codes? = nil,
            snapshotArguments: [String]? = nil, record: Record? = nil, commandLimit: CommandLimit = CommandLimit(), clips: Clips? = nil,
            retention: [FileKind: RetentionLimits] = [:], motionArguments: [String]? = []
        ) {
            self.motionArguments = motionArguments
            self.name = name
            self.displayName = displayName
            self.inputArguments = inputArguments
            self.faces = faces
            self.codes = codes
            self.snapshotArguments = snapshotArguments
            self.record = record
            self.commandLimit = commandLimit
            self.clips = clips
            self.retention = retention
        }
    }

    /// The browser preview of every camera (`cvcam preview`'s pages), when configured.
    package struct Preview: Equatable, Sendable {
        package var listen = ListenAddress.defaultValue
        /// From `tokenFile` or the variable `tokenEnv` names; required beyond loopback; never printed.
        package var token: String?
        package var stream = MJPEGFanOut.Settings(maximumSize: nil, quality: 70, framesPerSecond: 15)
        /// Host names the preview answers to besides its own (`HostAllowlist`).
        package var allowedHosts: [String] = []

        /// Creates the value from each of its properties.
        package init(listen: ListenAddress = ListenAddress.defaultValue, token: String? = nil, stream: MJPEGFanOut.Settings = MJPEGFanOut.Settings(maximumSize: nil, quality: 70, framesPerSecond: 15), allowedHosts: [String] = []) {
            self.listen = listen
            self.token = token
            self.stream = stream
            self.allowedHosts = allowedHosts
        }
    }

    package var mqtt: MQTT
    /// Seconds between `stats` messages; nil: none.
    package var statsInterval: Double? = 60
    /// `host:port` of the Prometheus endpoint; nil: none.
    package var metricsListen: String?
    /// Host names the Prometheus endpoint answers to besides its own (`HostAllowlist`).
    package var metricsAllowedHosts: [String] = []
    package var preview: Preview?
    /// Daemon-wide retention (`ServeConfig+Files.swift`).
    package var retention = Retention()
    package var cameras: [Camera]

    /// A camera's name as a topic level and file-name prefix.
    package static func isValidName(_ name: String) -> Bool { name.wholeMatch(of: /[A-Za-z0-9_-]{1,64}/) != nil }

    /// Reads and checks `path` (within `ServeConfigFile`'s bounds); every problem in the file is
    /// reported at once.
    package static func load(path: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws(ServeConfigError) -> ServeConfig {
        try parse(ServeConfigFile.read(path: path), file: path, environment: environment)
    }

    /// Checks `text`'s shape, composes it and reads it (`ServeConfigFile.compose`).
    package static func parse(_ text: String, file: String = "config", environment: [String: String] = [:]) throws(ServeConfigError) -> ServeConfig {
        let (config, problems) = try ServeConfigFile.compose(text, file: file) { root in
            var reader = ConfigReader(environment: environment)
            reader.configPath = URL(fileURLWithPath: file).resolvingSymlinksInPath().path
            let config = reader.read(root)
            return (config, reader.problems)
        }
        guard problems.isEmpty, let config else { throw ServeConfigError(file: file, problems) }
        return config
    }

    /// The client ID a daemon uses when the file names none: `cvcam-<host>-<8 hex digits>`, the
    /// digits a stable hash (FNV-1a) of the topic prefix and the configuration file's absolute
    /// path. Two daemons on one box with different files or prefixes get different IDs (a broker
    /// drops the older connection of two with one ID, and they would take turns forever); the
    /// same daemon gets the same ID at every start.
    package static func defaultClientID(host: String, topicPrefix: String, configPath: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in (topicPrefix + "\n" + configPath).utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        let short = String(UInt32(truncatingIfNeeded: hash ^ (hash >> 32)), radix: 16)
        let safeHost = String(host.unicodeScalars.filter { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "-") }.map(Character.init))
        return "cvcam-\(safeHost.isEmpty ? "host" : safeHost)-" + String(repeating: "0", count: 8 - short.count) + short
    }

    /// This machine's host name, first label only (`box` for `box.example.org`).
    package static var shortHostName: String {
        ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? "host"
    }

    /// Why the daemon could not write files into the folder `path` (making it and its parents
    /// when missing, as it does at start), or nil. Nothing is created: `--check` and the start-up
    /// refuse the same folders, a file where a folder should be, one this user cannot write
    /// (read-only file system, permissions) or one that cannot be made. The corresponding C
    /// functions are `stat(2)` and `access(2)`.
    package static func folderProblem(_ path: String) -> String? {
        var info = stat()
        if stat(path, &info) == 0 {
            guard info.st_mode & S_IFMT == S_IFDIR else { return "\(path) is a file, not a folder" }
            guard access(path, W_OK | X_OK) == 0 else {
                return "cannot write into \(path): \(AtomicFile.advice(for: errno, folder: path))"
            }
            return nil
        }
        guard errno == ENOENT || errno == ENOTDIR else { return "cannot use \(path): \(String(cString: strerror(errno)))" }
        // Missing: the nearest existing folder above must be one this user can write into.
        var ancestor = (path as NSString).deletingLastPathComponent
        while true {
            if ancestor.isEmpty { ancestor = "." }
            if stat(ancestor, &info) == 0 { break }
            guard ancestor != "/" && ancestor != "." else { return "cannot make \(path): \(String(cString: strerror(errno)))" }
            ancestor = (ancestor as NSString).deletingLastPathComponent
        }
        guard info.st_mode & S_IFMT == S_IFDIR else { return "cannot make \(path): \(ancestor) is a file, not a folder" }
        guard access(ancestor, W_OK | X_OK) == 0 else {
            return "cannot make \(path): \(AtomicFile.advice(for: errno, folder: ancestor))"
        }
        return nil
    }

    /// Creates the value from each of its properties.
    package init(mqtt: MQTT, statsInterval: Double? = 60, metricsListen: String? = nil, preview: Preview? = nil, retention: Retention = Retention(), cameras: [Camera]) {
        self.mqtt = mqtt
        self.statsInterval = statsInterval
        self.metricsListen = metricsListen
        self.preview = preview
        self.retention = retention
        self.cameras = cameras
    }
}

/// What is wrong with a configuration file: every problem, each with its line, camera and key.
package struct ServeConfigError: Error, CustomStringConvertible {
    package struct Problem: Equatable, Sendable {
        /// `cameras[1] (door): snapshots.minScore`, `mqtt.broker`, or "" for the whole file.
        package var path: String
        package var line: Int?
        package var message: String

        /// Creates the value from each of its properties.
        package init(path: String, line: Int? = nil, message: String) {
            self.path = path
            self.line = line
            self.message = message
        }
    }

    package var file: String
    package var problems: [Problem]

    package init(file: String, _ problems: [Problem]) {
        self.file = file
        self.problems = problems
    }

    package var description: String {
        summary(outcome: "nothing was started") + ":\n" + problemLines.map { "  " + $0 }.joined(separator: "\n")
    }

    /// `FILE: N problems; <outcome>`.
    package func summary(outcome: String) -> String {
        "\(file): \(problems.count == 1 ? "1 problem" : "\(problems.count) problems"); \(outcome)"
    }

    /// One line per problem, `line N: path: message`, for a log that writes each message as one
    /// line (a line break inside a message would be escaped there).
    package var problemLines: [String] {
        problems.map { p in
            let text = (p.line.map { "line \($0): " } ?? "") + (p.path.isEmpty ? "" : p.path + ": ") + p.message
            // Redacted: a problem may quote an input or a parser's message about one.
            return Redaction.redact(
                text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " "))
        }
    }
}

/// Walks the YAML tree, collecting problems instead of stopping at the first.
package struct ConfigReader {
    package let environment: [String: String]
    package var problems: [ServeConfigError.Problem] = []
    /// Every camera name read, valid camera or not, to find the same name used twice.
    package var names: [String] = []
    /// The file's absolute path, for the default client ID ("config" when parsed from text).
    package var configPath = "config"

    package init(environment: [String: String]) { self.environment = environment }

    package mutating func problem(_ path: String, _ node: Node?, _ message: String) {
        problems.append(.init(path: path, line: node?.mark?.line, message: message))
    }

    /// The mapping at `node` with only `known` keys; nil (and a problem) otherwise.
    package mutating func mapping(_ node: Node?, _ path: String, known: [String]) -> [(key: String, value: Node, keyNode: Node)]? {
        guard let node, case .mapping(let mapping) = node else {
            problem(path, node, "must be a mapping of keys (\(known.joined(separator: ", ")))")
            return nil
        }
        var pairs: [(key: String, value: Node, keyNode: Node)] = []
        for (key, value) in mapping {
            let name = key.string ?? ""
            guard known.contains(name) else {
                problem(join(path, name), key, "unknown key; the keys here are \(known.joined(separator: ", "))")
                continue
            }
            pairs.append((name, value, key))
        }
        return pairs
    }

    package func join(_ path: String, _ key: String) -> String { path.isEmpty ? key : path + "." + key }

    package mutating func string(_ node: Node, _ path: String) -> String? {
        guard case .scalar = node, let s = node.string, !s.isEmpty else {
            problem(path, node, "must be a non-empty text value")
            return nil
        }
        return s
    }

    package mutating func number(_ node: Node, _ path: String, _ range: ClosedRange<Double>) -> Double? {
        guard case .scalar = node, let v = node.float ?? node.int.map(Double.init), range.contains(v) else {
            problem(path, node, "must be a number in \(range.lowerBound)…\(range.upperBound) (got '\(node.string ?? "?")')")
            return nil
        }
        return v
    }

    package mutating func integer(_ node: Node, _ path: String, _ range: ClosedRange<Int>) -> Int? {
        guard case .scalar = node, let v = node.int, range.contains(v) else {
            problem(path, node, "must be a whole number in \(range.lowerBound)…\(range.upperBound) (got '\(node.string ?? "?")')")
            return nil
        }
        return v
    }

    package mutating func bytes(_ node: Node, _ path: String) -> Int? {
        guard case .scalar = node, let text = node.string, let v = RecordingFiles.parseBytes(text), v <= Int64(Int.max) else {
            problem(path, node, "must be a size in bytes, optionally with K, M or G (e.g. 64M; got '\(node.string ?? "?")')")
            return nil
        }
        return Int(v)
    }

    /// A folder the daemon writes into (`ServeConfig.folderProblem`); the problem names the key.
    package mutating func folder(_ value: String, _ path: String, _ node: Node) {
        if let why = ServeConfig.folderProblem(value) { problem(path, node, why) }
    }

    /// A topic prefix: levels without wildcards, not starting or ending with "/".
    package mutating func topicPrefix(_ node: Node, _ path: String) -> String? {
        guard let s = string(node, path) else { return nil }
        guard !s.contains("+"), !s.contains("#"), !s.hasPrefix("/"), !s.hasSuffix("/"), !s.contains("//"),
            !s.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
        else {
            problem(path, node, "must be topic levels like cvcam or site/cvcam: no +, #, empty levels or control characters")
            return nil
        }
        return s
    }

    package mutating func read(_ root: Node?) -> ServeConfig? {
        guard let top = mapping(root, "", known: ["mqtt", "stats", "metrics", "preview", "retention", "cameras"]) else { return nil }
        var mqtt: ServeConfig.MQTT?
        var stats: Double? = 60
        var metrics: String?
        var metricsHosts: [String] = []
        var preview: ServeConfig.Preview?
        var retention = ServeConfig.Retention()
        var cameras: [ServeConfig.Camera] = []
        var sawCameras = false
        for (key, value, _) in top {
            switch key {
            case "mqtt": mqtt = readMQTT(value)
            case "stats":
                stats = number(value, "stats", 0...86_400).flatMap { $0 == 0 ? nil : max($0, 0.1) }
            case "metrics":
                guard let m = mapping(value, "metrics", known: ["listen", "allowedHosts"]) else { break }
                for (key, v, _) in m {
                    if key == "allowedHosts" {
                        metricsHosts = hostNames(v, "metrics.allowedHosts") ?? []
                        continue
                    }
                    guard let listen = string(v, "metrics.listen") else { continue }
                    do {
                        _ = try MetricsServer.Address(parsing: listen)
                        metrics = listen
                    } catch {
                        problem("metrics.listen", v, "\(error); use HOST:PORT, e.g. 127.0.0.1:9464")
                    }
                }
            case "preview": preview = readPreview(value)
            case "retention": retention = readRetention(value, "retention", global: true) ?? retention
            case "cameras":
                sawCameras = true
                guard case .sequence(let list) = value, !list.isEmpty else {
                    problem("cameras", value, "must be a list with at least one camera")
                    break
                }
                for (i, item) in list.enumerated() { if let c = readCamera(item, index: i) { cameras.append(c) } }
            default: break
            }
        }
        if mqtt == nil && !top.contains(where: { $0.key == "mqtt" }) {
            problem("mqtt", root, "missing: the broker to publish to (mqtt: {broker: mqtt://HOST:1883})")
        }
        if !sawCameras { problem("cameras", root, "missing: the list of cameras to run") }
        var seen: [String: Int] = [:]
        for name in names {
            seen[name, default: 0] += 1
            if seen[name] == 2 { problem("cameras", root, "the name '\(TerminalText.escaped(name))' is used by more than one camera; names must be unique") }
        }
        guard let mqtt else { return nil }
        var config = ServeConfig(mqtt: mqtt, statsInterval: stats, metricsListen: metrics, preview: preview, retention: retention, cameras: cameras)
        config.metricsAllowedHosts = metricsHosts
        return config
    }

    /// `preview:` — the options of `cvcam preview` that concern the server, camelCased.
    package mutating func readPreview(_ node: Node) -> ServeConfig.Preview? {
        let known = ["listen", "tokenFile", "tokenEnv", "streamSize", "streamQuality", "streamFps", "allowedHosts"]
        guard let m = mapping(node, "preview", known: known) else { return nil }
        var result = ServeConfig.Preview()
        var ok = true
        for (key, v, _) in m {
            let path = "preview." + key
            switch key {
            case "listen":
                guard let text = string(v, path) else { ok = false; continue }
                guard let address = ListenAddress(text) else {
                    problem(path, v, "must be HOST:PORT, [IPv6]:PORT or :PORT with a port from 0 to 65535 (got '\(TerminalText.escaped(text))')")
                    ok = false
                    continue
                }
                result.listen = address
            case "tokenFile", "tokenEnv":
                guard let name = string(v, path) else { ok = false; continue }
                let token: String
                if key == "tokenFile" {
                    guard let data = FileManager.default.contents(atPath: name) else {
                        problem(path, v, "cannot read the token file \(TerminalText.escaped(name)); check the path and its permissions")
                        ok = false
                        continue
                    }
                    token = PreviewToken.firstLine(data)
                } else {
                    guard let value = environment[name] else {
                        problem(path, v, "the environment variable \(TerminalText.escaped(name)) is not set (the unit's EnvironmentFile or `export` should set it)")
                        ok = false
                        continue
                    }
                    token = value
                }
                // The problem names the rule, never the token.
                Redaction.remember(token)
                if let why = PreviewToken.problem(token) { problem(path, v, "the token \(why)"); ok = false }
                result.token = token
            case "streamSize":
                guard let text = string(v, path), let size = ViewSize(argument: text) else {
                    problem(path, v, "must be WIDTHxHEIGHT, e.g. 1280x720")
                    ok = false
                    continue
                }
                result.stream.maximumSize = .init(width: size.width, height: size.height)
            case "streamQuality": result.stream.quality = integer(v, path, 1...100) ?? result.stream.quality
            case "allowedHosts":
                guard let names = hostNames(v, path) else { ok = false; continue }
                result.allowedHosts = names
            default: result.stream.framesPerSecond = number(v, path, 0.1...120) ?? result.stream.framesPerSecond
            }
        }
        if m.contains(where: { $0.key == "tokenFile" }) && m.contains(where: { $0.key == "tokenEnv" }) {
            problem("preview.tokenFile", node, "use either tokenFile or tokenEnv, not both")
            ok = false
        }
        if ok && !result.listen.isLoopback && result.token == nil {
            problem(
                "preview.listen", node,
                "\(result.listen) can be reached from other machines: give tokenFile or tokenEnv, or listen on 127.0.0.1")
            ok = false
        }
        return ok ? result : nil
    }

    /// `allowedHosts`: a host name, an IP address or `*`, or a list of them.
    package mutating func hostNames(_ node: Node, _ path: String) -> [String]? {
        let items: [Node] = if case .sequence(let list) = node { Array(list) } else { [node] }
        var names: [String] = []
        for item in items {
            guard case .scalar = item, let name = item.string, HostAllowlist.isValidName(name) else {
                problem(path, item, "must be host names or IP addresses without a port (or * for any), e.g. [camera.local, 192.168.1.20]")
                return nil
            }
            names.append(name)
        }
        return names
    }

    package mutating func readMQTT(_ node: Node) -> ServeConfig.MQTT? {
        let known = ["broker", "clientID", "username", "passwordFile", "passwordEnv", "caFile", "certFile", "keyFile", "keepAlive",
                     "topicPrefix", "queue", "homeAssistant"]
        guard let m = mapping(node, "mqtt", known: known) else { return nil }
        let before = problems.count
        var result = ServeConfig.MQTT(broker: "", clientID: "")
        var ok = true
        for (key, v, _) in m {
            let path = "mqtt." + key
            switch key {
            case "broker":
                guard let url = string(v, path) else { ok = false; continue }
                if let why = Self.brokerProblem(url) { problem(path, v, why); ok = false }
                // What the client itself will refuse (a port past 65535 that URLComponents lets by).
                else if case .failure(let error) = Result(catching: { () throws(MQTTError) in try MQTTBroker(url: url) }) {
                    problem(path, v, error.message)
                    ok = false
                }
                result.broker = url
            case "clientID":
                guard let id = string(v, path) else { ok = false; continue }
                if id.utf8.count > 65_535 { problem(path, v, "is too long"); ok = false }
                result.clientID = id
            case "username": result.username = string(v, path)
            case "passwordFile":
                guard let file = string(v, path) else { continue }
                do {
                    let password = try LocalFiles.readText(file, maximumBytes: 65_536).trimmingCharacters(in: .newlines)
                    Redaction.remember(password)
                    result.password = password
                } catch {
                    problem(path, v, "cannot read the password file \(file): \(error.description)")
                }
            case "passwordEnv":
                guard let name = string(v, path) else { continue }
                if let value = environment[name] {
                    Redaction.remember(value)
                    result.password = value
                } else {
                    problem(path, v, "the environment variable \(name) is not set (the unit's EnvironmentFile or `export` should set it)")
                }
            case "caFile", "certFile", "keyFile":
                guard let file = string(v, path) else { continue }
                if access(file, R_OK) != 0 { problem(path, v, "cannot read \(file): \(String(cString: strerror(errno)))") }
                switch key {
                case "caFile": result.caFile = file
                case "certFile": result.certFile = file
                default: result.keyFile = file
                }
            case "keepAlive": result.keepAlive = integer(v, path, 5...65_535) ?? result.keepAlive
            case "topicPrefix": result.topicPrefix = topicPrefix(v, path) ?? result.topicPrefix
            case "queue":
                guard let q = mapping(v, path, known: ["maxMessages", "maxBytes", "spool", "maxSpoolBytes"]) else { continue }
                for (qk, qv, _) in q {
                    let qp = path + "." + qk
                    switch qk {
                    case "maxMessages": result.maxQueuedMessages = integer(qv, qp, 1...10_000_000) ?? result.maxQueuedMessages
                    case "maxBytes": result.maxQueuedBytes = bytes(qv, qp) ?? result.maxQueuedBytes
                    case "spool":
                        result.spool = string(qv, qp)
                        if let spool = result.spool { folder(spool, qp, qv) }
                    default: result.maxSpoolBytes = bytes(qv, qp) ?? result.maxSpoolBytes
                    }
                }
            case "homeAssistant":
                guard let h = mapping(v, path, known: ["discoveryPrefix", "enabled"]) else { continue }
                var prefix: String? = "homeassistant"
                var enabled = true
                for (hk, hv, _) in h {
                    if hk == "discoveryPrefix" { prefix = topicPrefix(hv, path + ".discoveryPrefix") }
                    else if let b = hv.bool { enabled = b } else { problem(path + ".enabled", hv, "must be true or false") }
                }
                result.discoveryPrefix = enabled ? prefix : nil
            default: break
            }
        }
        if !m.contains(where: { $0.key == "broker" }) { problem("mqtt.broker", node, "missing: e.g. mqtt://127.0.0.1:1883"); ok = false }
        if result.password != nil && result.username == nil { problem("mqtt.username", node, "missing: a password needs a username") }
        if (result.certFile == nil) != (result.keyFile == nil) {
            problem("mqtt.certFile", node, "certFile and keyFile go together (a client certificate and its key)")
        }
        if result.clientID.isEmpty {
            result.clientID = ServeConfig.defaultClientID(
                host: ServeConfig.shortHostName, topicPrefix: result.topicPrefix, configPath: configPath)
        }
        // Whatever else the MQTT client would refuse at start (TLS files with mqtt://, …): the
        // same check, so `--check` and the start-up agree.
        if ok && problems.count == before {
            do throws(MQTTError) { try MQTTClient.validate(MQTTLink.clientOptions(result)) } catch {
                problem("mqtt", node, error.message)
                ok = false
            }
        }
        return ok ? result : nil
    }

    /// Why `url` is not a broker address, or nil.
    package static func brokerProblem(_ url: String) -> String? {
        // Whatever the URL is, a password or token in it is never echoed.
        Redaction.remember(secretsIn: url)
        let shown = TerminalText.escaped(Redaction.redact(url))
        guard let c = URLComponents(string: url), let scheme = c.scheme?.lowercased(), ["mqtt", "mqtts"].contains(scheme) else {
            return "must be mqtt://HOST[:PORT] or mqtts://HOST[:PORT] (got '\(shown)')"
        }
        if c.user != nil || c.password != nil || url.contains("@") {
            return "must not hold credentials; use mqtt.username with passwordFile or passwordEnv"
        }
        guard let host = c.host, !host.isEmpty else { return "has no host (got '\(shown)')" }
        if let port = c.port, !(1...65_535).contains(port) { return "port must be 1…65535" }
        return nil
    }

    // MARK: Cameras

    package static let cameraKeys = [
        "name", "displayName", "input", "size", "fps", "pixelFormat", "setCtrl", "rotate", "mirror", "preset", "connectTimeout",
        "rectOfInterest", "faces", "codes", "snapshots", "record", "commands", "motion", "clips", "retention",
    ]
    package static let motionKeys = ["threshold", "minArea", "idleInterval", "endDelay", "masks"]
    package static let snapshotKeys = [
        "dir", "minFaceSize", "minScore", "maxRoll", "maxYaw", "minSharpness", "bestOf", "faceCooldown", "cooldown", "preFrames",
        "maxPerWindow", "window", "every", "quality",
    ]

    package mutating func readCamera(_ node: Node, index: Int) -> ServeConfig.Camera? {
        var label = "cameras[\(index)]"
        let nameNode: Node? = if case .mapping = node { node["name"] } else { nil }
        if let name = nameNode?.string { label += " (\(TerminalText.escaped(name)))" }
        guard let m = mapping(node, label, known: Self.cameraKeys) else { return nil }
        let before = problems.count
        var name = ""
        var display: String?
        // Files and scenes play at their own rate, as a camera would.
        var inputArgs: [String] = ["--realtime"]
        var faces: ServeConfig.Faces?
        var codes: ServeConfig.Codes?
        var snapshots: [String]?
        var record: ServeConfig.Record?
        var commandLimit = ServeConfig.CommandLimit()
        var motion: [String]? = []
        var clipsNode: Node?
        var retention: ServeConfig.Retention?
        var optionKeys: [String: String] = [:]
        for (key, v, _) in m {
            let path = label + ": " + key
            switch key {
            case "name":
                guard let n = string(v, path) else { continue }
                if !ServeConfig.isValidName(n) {
                    problem(path, v, "must be 1 to 64 letters, digits, - or _ (it is a topic level and a file name)")
                }
                name = n
                names.append(n)
            case "displayName": display = string(v, path)
            case "input":
                guard let input = string(v, path) else { continue }
                // A camera by path, index or ID is --device; everything else --input.
                let isDevice = input.hasPrefix("/dev/") || Int(input) != nil
                inputArgs += [isDevice ? "--device" : "--input", input]
                optionKeys[isDevice ? "device" : "input"] = "input"
            case "mirror":
                guard let b = v.bool else { problem(path, v, "must be true or false"); continue }
                if b { inputArgs.append("--mirror") }
            case "rectOfInterest":
                let text: String?
                if case .sequence(let list) = v { text = list.map { $0.string ?? "?" }.joined(separator: ",") } else { text = v.string }
                inputArgs += ["--rect-of-interest", text ?? ""]
                optionKeys["rect-of-interest"] = "rectOfInterest"
            case "setCtrl":
                let items: [Node] = if case .sequence(let list) = v { Array(list) } else { [v] }
                for item in items { inputArgs += ["--set-ctrl", item.string ?? ""] }
                optionKeys["set-ctrl"] = "setCtrl"
            case "size", "fps", "pixelFormat", "rotate", "preset", "connectTimeout":
                guard case .scalar = v, let s = v.string else { problem(path, v, "must be a single value"); continue }
                let option = Self.kebab(key)
                inputArgs += ["--" + option, s]
                optionKeys[option] = key
            case "faces": faces = readFaces(v, label)
            case "codes": codes = readCodes(v, label)
            case "snapshots": snapshots = readSnapshots(v, label)
            case "record": record = readRecord(v, label)
            case "commands": commandLimit = readCommandLimit(v, label) ?? commandLimit
            case "motion": motion = readMotion(v, label)
            case "clips": clipsNode = v  // read once faces and codes are known
            case "retention": retention = readRetention(v, label + ": retention", global: false)
            default: break
            }
        }
        if name.isEmpty && !m.contains(where: { $0.key == "name" }) { problem(label + ": name", node, "missing: every camera needs a name") }
        if !m.contains(where: { $0.key == "input" }) {
            problem(label + ": input", node, "missing: a camera (/dev/video0, its index or ID), a URL, a file or synthetic:SPEC")
        }
        // The input's own parser decides what the options mean together (and that a URL is one).
        if let options = parsed(InputOptions.self, inputArgs, keys: optionKeys, section: "", label: label, node: node),
            options.input == "-"
        {
            problem(label + ": input", node, "standard input cannot be a camera of the daemon")
        }
        if snapshots != nil && faces == nil {
            problem(label + ": snapshots", node, "snapshots are taken when faces appear: add `faces: {}` to this camera")
        }
        if faces == nil && codes == nil {
            problem(label, node, "detects nothing: add `faces: {}`, `codes: [qr]` or both")
        }
        let clips = clipsNode.flatMap { readClips($0, label, hasFaces: faces != nil, hasCodes: codes != nil, hasMotion: motion != nil) }
        var writes = Set<FileKind>()
        if snapshots != nil { writes.insert(.snapshots) }
        if clipsNode != nil { writes.insert(.clips) }
        if record != nil { writes.insert(.recordings) }
        checkRetention(retention, camera: label, node: node, writes: writes)
        guard problems.count == before else { return nil }
        return ServeConfig.Camera(
            name: name, displayName: display ?? name, inputArguments: inputArgs, faces: faces, codes: codes,
            snapshotArguments: snapshots, record: record, commandLimit: commandLimit, clips: clips,
            retention: retention?.limits ?? [:], motionArguments: motion)
    }

    /// `commands: {perSecond: 1, burst: 10}`.
    package mutating func readCommandLimit(_ v: Node, _ label: String) -> ServeConfig.CommandLimit? {
        let path = label + ": commands"
        guard let m = mapping(v, path, known: ["perSecond", "burst"]) else { return nil }
        var result = ServeConfig.CommandLimit()
        for (key, value, _) in m {
            if key == "perSecond" {
                result.perSecond = number(value, path + ".perSecond", 0.001...1000) ?? result.perSecond
            } else {
                result.burst = integer(value, path + ".burst", 1...10_000) ?? result.burst
            }
        }
        return result
    }

    /// `motion:` — `false` (off), `true` or `{}` (the defaults), or `MotionOptions`' settings:
    /// `threshold`, `minArea`, `idleInterval`, `endDelay`, and `masks` (a list of rectangles,
    /// each `[x, y, w, h]` or `"x,y,w,h"` in 0…1 of the frame).
    package mutating func readMotion(_ v: Node, _ label: String) -> [String]? {
        if let b = v.bool, case .scalar = v { return b ? [] : nil }
        guard let m = mapping(v, label + ": motion", known: Self.motionKeys) else { return nil }
        var args: [String] = []
        var keys: [String: String] = [:]
        for (key, value, _) in m {
            let path = label + ": motion." + key
            if key == "masks" {
                guard case .sequence(let list) = value else {
                    problem(path, value, "must be a list of rectangles, each [x, y, w, h] or \"x,y,w,h\" in 0…1 of the frame")
                    continue
                }
                for item in list {
                    let text: String
                    if case .sequence(let numbers) = item { text = numbers.map { $0.string ?? "?" }.joined(separator: ",") } else {
                        text = item.string ?? ""
                    }
                    args += ["--motion-mask", text]
                }
                keys["motion-mask"] = "masks"
                continue
            }
            guard case .scalar = value, let s = value.string else { problem(path, value, "must be a single value"); continue }
            let option = "motion-" + Self.kebab(key)
            args += ["--" + option, s]
            keys[option] = key
        }
        guard parsed(MotionOptions.self, args, keys: keys, section: "motion.", label: label, node: v, pairs: m) != nil else {
            return nil
        }
        return args
    }

    package mutating func readFaces(_ v: Node, _ label: String) -> ServeConfig.Faces? {
        // `faces: true` or `faces: {}`: the defaults.
        if let b = v.bool, case .scalar = v { return b ? ServeConfig.Faces(arguments: []) : nil }
        guard let m = mapping(v, label + ": faces", known: ["detection", "scanInterval", "updateInterval", "models"]) else { return nil }
        var result = ServeConfig.Faces(arguments: [])
        var keys: [String: String] = [:]
        for (key, value, _) in m {
            let path = label + ": faces." + key
            guard case .scalar = value, let s = value.string else { problem(path, value, "must be a single value"); continue }
            switch key {
            case "updateInterval": result.updateInterval = number(value, path, OptionRange.seconds) ?? result.updateInterval
            case "detection": result.arguments += ["--face-detection", s]; keys["face-detection"] = key
            case "scanInterval": result.arguments += ["--face-scan-interval", s]; keys["face-scan-interval"] = key
            default: result.arguments += ["--models", s]; keys["models"] = key
            }
        }
        guard parsed(FaceOptions.self, result.arguments, keys: keys, section: "faces.", label: label, node: v, pairs: m) != nil
        else { return nil }
        return result
    }

    package mutating func readCodes(_ v: Node, _ label: String) -> ServeConfig.Codes? {
        let path = label + ": codes"
        var typesNode: Node? = v
        var result = ServeConfig.Codes(types: .only([.qr]))
        if case .mapping = v {
            guard let m = mapping(v, path, known: ["types", "repeatInterval"]) else { return nil }
            typesNode = nil
            for (key, value, _) in m {
                if key == "types" { typesNode = value } else {
                    result.repeatInterval = number(value, path + ".repeatInterval", OptionRange.seconds) ?? result.repeatInterval
                }
            }
        } else if let b = v.bool, case .scalar = v {
            return b ? result : nil
        }
        guard let typesNode else { return result }
        let text: String
        if case .sequence(let list) = typesNode { text = list.map { $0.string ?? "?" }.joined(separator: ",") } else {
            text = typesNode.string ?? ""
        }
        guard let types = CodeTypeSelection(argument: text) else {
            problem(path, typesNode, "must be code types from \(CodeTypeSelection.allValueStrings.joined(separator: ", ")) (got '\(text)')")
            return nil
        }
        result.types = types
        return result
    }

    package mutating func readSnapshots(_ v: Node, _ label: String) -> [String]? {
        guard let m = mapping(v, label + ": snapshots", known: Self.snapshotKeys) else { return nil }
        var args: [String] = []
        var keys: [String: String] = [:]
        for (key, value, _) in m {
            guard case .scalar = value, let s = value.string else {
                problem(label + ": snapshots." + key, value, "must be a single value")
                continue
            }
            if key == "dir", !s.isEmpty { folder(s, label + ": snapshots.dir", value) }
            args += ["--" + Self.kebab(key), s]
            keys[Self.kebab(key)] = key
        }
        guard m.contains(where: { $0.key == "dir" }) else {
            problem(label + ": snapshots.dir", v, "missing: the folder snapshots are written to")
            return nil
        }
        guard parsed(SnapshotOptions.self, args, keys: keys, section: "snapshots.", label: label, node: v, pairs: m) != nil else { return nil }
        return args
    }

    package mutating func readRecord(_ v: Node, _ label: String) -> ServeConfig.Record? {
        let path = label + ": record"
        guard let m = mapping(v, path, known: ["dir", "segment", "quality"]) else { return nil }
        var result = ServeConfig.Record(dir: "")
        for (key, value, _) in m {
            switch key {
            case "dir":
                result.dir = string(value, path + ".dir") ?? ""
                if !result.dir.isEmpty { folder(result.dir, path + ".dir", value) }
            case "segment": result.segment = number(value, path + ".segment", 1...86_400) ?? result.segment
            default: result.quality = integer(value, path + ".quality", 1...100) ?? result.quality
            }
        }
        guard !result.dir.isEmpty else {
            problem(path + ".dir", v, "missing: the folder recordings are written to")
            return nil
        }
        return result
    }

    /// `args` read by `Command`'s own parser; a problem is reported in the file's words (`keys`
    /// maps options to keys, prefixed by `section`), on the line of the key it names among
    /// `pairs`, else on `node`'s.
    package mutating func parsed<Command: ParsableArguments>(
        _ type: Command.Type, _ args: [String], keys: [String: String], section: String, label: String, node: Node,
        pairs: [(key: String, value: Node, keyNode: Node)] = []
    ) -> Command? {
        do { return try Command.parse(args) } catch {
            let text = Self.reworded(Command.message(for: error), keys: keys, section: section)
            problem(label, Self.node(named: text, in: pairs, section: section) ?? node, text)
            return nil
        }
    }

    /// The key a message names (`snapshots.minScore …`), for its line.
    package static func node(named message: String, in pairs: [(key: String, value: Node, keyNode: Node)], section: String) -> Node? {
        pairs.sorted { $0.key.count > $1.key.count }.first { message.contains(section + $0.key) }?.keyNode
    }

    /// `minFaceSize` → `min-face-size`.
    package static func kebab(_ key: String) -> String {
        key.unicodeScalars.map { CharacterSet.uppercaseLetters.contains($0) ? "-" + String($0).lowercased() : String($0) }.joined()
    }

    /// A command-line parser's message in the file's words: `--min-score` becomes `snapshots.minScore`.
    package static func reworded(_ message: String, keys: [String: String], section: String) -> String {
        var text = message
        for (option, key) in keys.sorted(by: { $0.key.count > $1.key.count }) {
            text = text.replacingOccurrences(of: "'--\(option)'", with: section + key)
            text = text.replacingOccurrences(of: "--\(option)", with: section + key)
        }
        if let unknown = text.firstMatch(of: /Unknown option '--([a-z-]+)'/) {
            text = "unknown key \(section)\(unknown.1)"
        }
        return text
    }
}
