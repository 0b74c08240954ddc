import Foundation
import Testing

@testable import CaptureServe
import AppTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// Hostile configuration files (issue #30, item 3): each is refused with a message, by
/// `serve --check` (exit 64, no crash) and by a running daemon's reload (which keeps running
/// and publishing).
@Suite(.serialized) struct ServeConfigFileTests {
    static let good = "mqtt: {broker: mqtt://127.0.0.1:1}\ncameras: [{name: a, input: \"synthetic:size=64x48\", codes: [qr]}]\n"

    /// Texts YAML parsers choke on, with what the refusal says.
    static let hostileTexts: [(String, String, String)] = [
        ("5,000 nested brackets", "cameras: " + String(repeating: "[", count: 5_000) + String(repeating: "]", count: 5_000) + "\n", "nests deeper"),
        ("5,000 nested braces", String(repeating: "{a: ", count: 5_000) + "1" + String(repeating: "}", count: 5_000) + "\n", "nests deeper"),
        ("5,000 nested sequences on a line", String(repeating: "- ", count: 5_000) + "x\n", "nests deeper"),
        ("1,000 indented levels", (0..<1_000).map { String(repeating: " ", count: $0) + "k\($0):" }.joined(separator: "\n") + " x\n", "nests deeper"),
        ("brackets after a quoted key holding #", "\"k #\": " + String(repeating: "[", count: 5_000) + "\n", "nests deeper"),
        ("brackets after an anchored quoted key", "&a \"k #\": " + String(repeating: "[", count: 5_000) + "\n", "nests deeper"),
        ("brackets after a flow string holding #", "[ \"#\", " + String(repeating: "[", count: 5_000) + "\n", "nests deeper"),
        ("brackets after a plain scalar with a quote", "a: x 'y\nb: " + String(repeating: "[", count: 5_000) + "\n", "nests deeper"),
        ("brackets after a block scalar", "a: |\n  text [\nb: " + String(repeating: "[", count: 5_000) + "\n", "nests deeper"),
        ("a billion laughs", Self.billionLaughs, "expands to more than"),
        ("anchors nesting anchors", Self.deepAliases, "nests deeper"),
        ("too many aliases", "a: &a x\nb: [" + Array(repeating: "*a", count: 1_001).joined(separator: ", ") + "]\n", "aliases"),
        ("a syntax error on a password's line", "mqtt: {broker: mqtt://127.0.0.1:1}\ncameras:\n  - input: \"rtsp://admin:Cfg9Secret@cam/x\n", "not valid YAML"),
    ]

    static var billionLaughs: String {
        var text = "l0: &l0 [\"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\"]\n"
        for level in 1...9 { text += "l\(level): &l\(level) [" + Array(repeating: "*l\(level - 1)", count: 10).joined(separator: ", ") + "]\n" }
        return text + "cameras: *l9\n"
    }

    static var deepAliases: String {
        var text = "a0: &a0 [[[[[[[[[[x]]]]]]]]]]\n"
        for level in 1...20 { text += "a\(level): &a\(level) [[[[[[[[[[*a\(level - 1)]]]]]]]]]]\n" }
        return text
    }

    @Test func hostileTextsAreRefusedBeforeTheyCanCrashTheParser() {
        for (what, text, says) in Self.hostileTexts {
            do {
                _ = try ServeConfig.parse(text, file: "hostile.yaml")
                Issue.record("\(what) was accepted")
            } catch {
                #expect(error.description.contains(says), "\(what): \(error.description)")
                #expect(!error.description.contains("Cfg9Secret"), "\(what): \(error.description)")
            }
        }
    }

    @Test func theShapeOfRealFilesPasses() throws {
        let real = """
            mqtt:
              broker: mqtts://broker.lan:8883   # comment with [brackets
              username: cvcam
              passwordFile: /etc/cvcam/password
              homeAssistant: {discoveryPrefix: homeassistant}
            preview: {listen: "127.0.0.1:8080", allowedHosts: [cams.lan]}
            cameras:
              - name: door
                displayName: "Front door [main]"
                input: "rtsp://cam/stream?x=[1]"
                faces: {scanInterval: 0.5}
                codes: {types: [qr, ean13], repeatInterval: 2}
                snapshots:
                  dir: /var/lib/cvcam/door
                  minScore: 0.8
                description: |
                  text with [[[[ brackets ]]]] and 'quotes
                    - and dashes
              - name: yard
                input: synthetic:size=64x48
                codes: [qr]
            """
        let shape = YAMLShape(real)
        #expect(shape.firstTooDeep(ServeConfigFile.maximumDepth) == nil)
        #expect((shape.depths.max() ?? 0) <= 8, "\(shape.depths)")
        #expect(shape.aliases == 0)
        #expect(YAMLShape(Self.good).firstTooDeep(ServeConfigFile.maximumDepth) == nil)
        // An alias where a node starts is counted; a star inside text is not.
        #expect(YAMLShape("a: &x 1\nb: *x\nc: \"*x\"\nd: 2*3\ne: [*x, *x]\n").aliases == 3)
        // The line of the first level too deep.
        #expect(YAMLShape("a: 1\nb: " + String(repeating: "[", count: 40) + "\n").firstTooDeep(32) == 2)
    }

    /// What cannot be a configuration file: a FIFO (reading would wait forever), /dev/zero
    /// (endless), a folder, a socket, a huge file, binary, invalid UTF-8, a file that is gone.
    @Test func unreadableAndEndlessFilesAreRefusedWithoutReading() throws {
        let dir = try ServeProcess.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        for (what, path, says) in try Self.hostileFiles(in: dir) {
            do {
                _ = try ServeConfig.load(path: path, environment: [:])
                Issue.record("\(what) was accepted")
            } catch {
                #expect(error.description.contains(says), "\(what): \(error.description)")
            }
        }
    }

    /// Files for `hostileFiles`, made in `dir`: (what, path, what the refusal says).
    static func hostileFiles(in dir: URL) throws -> [(String, String, String)] {
        let fifo = dir.appendingPathComponent("fifo.yaml").path
        guard mkfifo(fifo, 0o600) == 0 else { throw CocoaError(.fileWriteUnknown) }
        let huge = dir.appendingPathComponent("huge.yaml")
        try Data(repeating: UInt8(ascii: "#"), count: ServeConfigFile.maximumBytes + 1).write(to: huge)
        let binary = dir.appendingPathComponent("binary.yaml")
        try Data([0x7F, 0x45, 0x4C, 0x46, 0x02, 0x01, 0x01, 0x00, 0x00]).write(to: binary)
        let latin1 = dir.appendingPathComponent("latin1.yaml")
        try Data("mqtt: {broker: mqtt://caf\u{E9}:1}\n".data(using: .isoLatin1)!).write(to: latin1)
        let folder = dir.appendingPathComponent("folder.yaml")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        var files: [(String, String, String)] = [
            ("a FIFO", fifo, "FIFO"),
            ("/dev/zero", "/dev/zero", "device"),
            ("a folder", folder.path, "folder"),
            ("a huge file", huge.path, "at most \(ServeConfigFile.maximumBytes) bytes"),
            ("a binary file", binary.path, "binary data"),
            ("invalid UTF-8", latin1.path, "not UTF-8"),
            ("a missing file", dir.appendingPathComponent("absent.yaml").path, "does not exist"),
        ]
        for (i, (what, text, says)) in hostileTexts.enumerated() {
            let file = dir.appendingPathComponent("text\(i).yaml")
            try text.write(to: file, atomically: true, encoding: .utf8)
            files.append((what, file.path, says))
        }
        return files
    }

    /// `serve --check` on each: exit 64 with the file's name and the reason, never a signal.
    @Test func checkRefusesEachHostileFileWithExit64() throws {
        let dir = try ServeProcess.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        for (what, path, says) in try Self.hostileFiles(in: dir) {
            let result = try CLI.run(["serve", "--config", path, "--check"])
            #expect(result.status == 64, "\(what): status \(result.status), \(result.stderr)")
            #expect(result.stderr.contains(says), "\(what): \(result.stderr)")
            #expect(result.stderr.contains("nothing was started"), "\(what): \(result.stderr)")
        }
    }

    /// A running daemon given each hostile file by SIGHUP logs the refusal and keeps its camera
    /// running and publishing; a good file afterwards is taken.
    @Test func aRunningDaemonSurvivesEveryHostileReload() throws {
        guard let broker = try MosquittoTestBroker.start() else { return }
        let dir = try ServeProcess.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let hostile = try Self.hostileFiles(in: dir)
        let config = dir.appendingPathComponent("serve.yaml")
        let good = try ServeProcess.mqttSection(broker, dir: dir) + """

            cameras:
              - name: keep
                input: "synthetic:size=160x120,fps=10,qr=KEEP"
                codes: {types: [qr], repeatInterval: 0.3}

            """
        try good.write(to: config, atomically: true, encoding: .utf8)
        let subscriber = try ServeBrokerTests.Subscriber(broker, filters: ["cvcam/#"], session: "serve-test-hostile")
        let daemon = try ServeProcess(config: config.path)
        let codes = { ServeBrokerTests.codeTimes(subscriber, "keep").count }
        #expect(subscriber.wait(60) { _ in codes() > 0 }, "\(daemon.stderr)")
        for (i, (what, path, _)) in hostile.enumerated() {
            // The configured path becomes the hostile file (a symbolic link to it).
            try? FileManager.default.removeItem(at: config)
            try FileManager.default.createSymbolicLink(atPath: config.path, withDestinationPath: path)
            daemon.signal(SIGHUP)
            let refusals = { daemon.stderr.components(separatedBy: "reload refused").count - 1 }
            #expect(subscriber.wait(60) { _ in refusals() >= i + 1 }, "\(what): no refusal logged: \(daemon.stderr.suffix(2000))")
            let before = codes()
            #expect(subscriber.wait(60) { _ in codes() > before }, "\(what): the camera stopped publishing")
            #expect(daemon.process.isRunning, "\(what): the daemon died")
        }
        try? FileManager.default.removeItem(at: config)
        try good.replacingOccurrences(of: "repeatInterval: 0.3", with: "repeatInterval: 0.4").write(to: config, atomically: true, encoding: .utf8)
        let starts = { subscriber.on("cvcam/keep/events").filter { $0.json?["type"] as? String == "start" }.count }
        #expect(starts() == 1, "a refused reload restarted the camera")
        daemon.signal(SIGHUP)
        // The changed camera restarts: the good file was taken.
        #expect(subscriber.wait(60) { _ in starts() == 2 }, "\(daemon.stderr.suffix(2000))")
        daemon.signal(SIGTERM)
        #expect(daemon.waitForExit(30) == 0)
    }
}
