import Foundation
import Testing

import AppTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// Issue #30, item 1: a distinctive password or token planted in every kind of input URL (rtsp,
/// rtsps, http, https, a query token, percent-encoded, raw `@ : /`, spaces, a scheme FFmpeg opens
/// as a file), in CVCAM_STREAM_PASSWORD, in the broker's password file, in the preview's token
/// file and in refused broker URLs, then every output channel searched for it: stdout, stderr
/// (`-v`), NDJSON, every MQTT topic (`#`), `/metrics`, the preview's pages and WebSocket
/// messages, `serve --check` and `cvcam doctor`.
@Suite(.serialized) struct SecretsNeverShownTests {
    /// What was seen, by channel.
    final class Seen: @unchecked Sendable {
        // @unchecked: only the test's thread touches it.
        var channels: [(String, String)] = []
        func add(_ channel: String, _ text: String) { channels.append((channel, text)) }

        /// Every (secret, channel) where a secret shows.
        func leaks(of secrets: [String]) -> [String] {
            var found: [String] = []
            for secret in secrets {
                for (channel, text) in channels where text.contains(secret) {
                    let line = text.components(separatedBy: "\n").first { $0.contains(secret) } ?? ""
                    found.append("\(secret) in \(channel): \(line.prefix(300))")
                }
            }
            return found
        }
    }

    /// A port nothing listens on: a camera there is refused at once.
    static func closedPort() throws -> Int { try MosquittoTestBroker.freePort() }

    @Test func noSecretReachesAnyOutput() throws {
        let closed = try Self.closedPort()
        let brokerPassword = "Sec11BrokerPW-\(UUID().uuidString.prefix(8))"
        guard let broker = try MosquittoTestBroker.start(password: brokerPassword) else { return }
        let live = try NetworkStreamTestServer.start(.mjpeg, arguments: ["--user", "viewer", "--password", "Sec10LivePW", "--fps", "10"])
        defer { live?.stop() }
        let dir = try ServeProcess.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let seen = Seen()

        // Inputs that fail at once, each with its own secret.
        let failing: [(String, String)] = [
            ("rtsp", "rtsp://admin:Sec1RtspPW@127.0.0.1:\(closed)/stream"),
            ("rtsps", "rtsps://admin:Sec2RtspsPW@127.0.0.1:\(closed)/stream"),
            ("http", "http://admin:Sec3HttpPW@127.0.0.1:\(closed)/video.mjpg"),
            ("https", "https://admin:Sec4HttpsPW@127.0.0.1:\(closed)/video.mjpg"),
            ("query", "http://127.0.0.1:\(closed)/video.mjpg?token=Sec5QueryTok&password=Sec6QueryPwd"),
            ("encoded", "rtsp://admin:Sec7%2FEnc%40PW@127.0.0.1:\(closed)/stream"),
            ("rtmp", "rtmp://admin:Sec8RtmpPW@127.0.0.1:\(closed)/app/stream"),
            ("env", "rtsp://admin@127.0.0.1:\(closed)/stream"),
            // Raw `@ : /` in the password (refused as an address) and spaces (taken).
            ("raw", "rtsp://admin:Sec16@x:y/z@127.0.0.1:\(closed)/live"),
            ("spaces", "rtsp://admin:Sec17 with space@127.0.0.1:\(closed)/live"),
        ]
        let environment = ["CVCAM_STREAM_USER": "admin", "CVCAM_STREAM_PASSWORD": "Sec9EnvPW"]
        let secrets = [
            "Sec1RtspPW", "Sec2RtspsPW", "Sec3HttpPW", "Sec4HttpsPW", "Sec5QueryTok", "Sec6QueryPwd", "Sec7%2FEnc%40PW", "Sec7/Enc@PW",
            "Sec8RtmpPW", "Sec9EnvPW", "Sec10LivePW", brokerPassword, "Sec12PreviewTok", "Sec13WrongScheme", "Sec14WsBroker",
            "Sec15BrokerQuery", "Sec16@x:y/z", "Sec16", "Sec17 with space", "Sec17", "Sec18Yaml", "Sec19Unusable",
        ]

        // The CLI: every failing input through `faces` (NDJSON, -v) and `scan` (text, -v).
        for (kind, url) in failing {
            for command in [["faces", "--json"], ["scan"]] {
                let run = try CLI.run(command + ["--input", url, "-v", "--connect-timeout", "3"], environment: environment)
                #expect(run.status != 0, "\(kind) \(command): \(run.stderr)")
                seen.add("\(command[0]) \(kind) stdout", run.stdout)
                seen.add("\(command[0]) \(kind) stderr", run.stderr)
            }
        }
        // An address that is no network camera's: refused when parsed, quoted redacted.
        let unusable = try CLI.run(["scan", "--input", "rtsp://admin:Sec19Unusable@/live", "-v"], environment: environment)
        #expect(unusable.status == 64, "\(unusable.stderr)")
        seen.add("scan unusable stderr", unusable.stderr)
        seen.add("scan unusable stdout", unusable.stdout)
        let preview = try CLI.run(["preview", "--input", failing[0].1, "--listen", "127.0.0.1:0", "-v", "--connect-timeout", "3"], environment: environment)
        seen.add("preview stdout", preview.stdout)
        seen.add("preview stderr", preview.stderr)
        let doctor = try CLI.run(["doctor"], environment: environment)
        seen.add("doctor stdout", doctor.stdout)
        seen.add("doctor stderr", doctor.stderr)

        // The daemon: every failing input, the live camera, the preview and the metrics.
        let tokenFile = dir.appendingPathComponent("token")
        try "Sec12PreviewTok\n".write(to: tokenFile, atomically: true, encoding: .utf8)
        let metricsPort = try MosquittoTestBroker.freePort()
        let served = failing.filter { $0.0 != "raw" }
        var cameras = served.map { kind, url in "  - name: \(kind)\n    input: \"\(url)\"\n    codes: [qr]\n    connectTimeout: 3\n" }
        if let live { cameras.append("  - name: live\n    input: \"\(live.url(user: "viewer", password: "Sec10LivePW"))\"\n    codes: [qr]\n") }
        let config = dir.appendingPathComponent("serve.yaml")
        try (ServeProcess.mqttSection(broker, dir: dir, extra: "  homeAssistant: {discoveryPrefix: ha}") + """

            metrics: {listen: "127.0.0.1:\(metricsPort)"}
            preview: {listen: "127.0.0.1:0", tokenFile: \(tokenFile.path)}
            stats: 1
            cameras:
            \(cameras.joined())
            """).write(to: config, atomically: true, encoding: .utf8)
        let check = try CLI.run(["serve", "--config", config.path, "--check"], environment: environment)
        #expect(check.status == 0, "\(check.stderr)")
        seen.add("serve --check stdout", check.stdout)
        seen.add("serve --check stderr", check.stderr)

        let subscriber = try ServeBrokerTests.Subscriber(broker, filters: ["#"], session: "serve-test-secrets")
        let daemon = try ServeProcess(config: config.path, arguments: ["-v"], environment: environment)
        let failures = { (name: String) in
            subscriber.on("cvcam/\(name)/events").filter { $0.json?["type"] as? String == "error" }.count
        }
        #expect(subscriber.wait(120) { _ in served.allSatisfy { failures($0.0) >= 2 } }, "\(daemon.stderr.suffix(3000))")
        if live != nil {
            #expect(subscriber.wait(60) { $0.on("cvcam/live/availability").last?.text == "online" }, "\(daemon.stderr.suffix(3000))")
        }
        let previewLine = daemon.stdout.components(separatedBy: "\n").first { $0.hasPrefix("preview: ") }
        let previewPort = try #require(previewLine.flatMap { URL(string: String($0.dropFirst("preview: ".count)))?.port }, "\(daemon.stdout)")
        let bearer = ["Authorization: Bearer Sec12PreviewTok"]
        for path in ["/", "/assets/preview.js"] + (served.map(\.0) + ["live"]).flatMap { ["/cameras/\($0)", "/cameras/\($0)/stats.json"] } {
            let page = try RawHTTPProbe.get(port: previewPort, path, host: "127.0.0.1:\(previewPort)", extra: bearer)
            seen.add("preview \(path)", page.text)
        }
        if live != nil {
            let socket = try RawHTTPProbe.exchange(
                port: previewPort,
                [
                    "GET /cameras/live/ws HTTP/1.1", "Host: 127.0.0.1:\(previewPort)", "Authorization: Bearer Sec12PreviewTok",
                    "Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
                    "Sec-WebSocket-Version: 13", "", "",
                ].joined(separator: "\r\n"), timeout: 3)
            #expect(socket.status == 101, "\(socket)")
            seen.add("preview WebSocket", socket.text)
        }
        var scrape: RawHTTPProbe.Outcome?
        for _ in 0..<100 where scrape?.status != 200 {
            scrape = try? RawHTTPProbe.get(port: metricsPort, "/metrics", host: "127.0.0.1:\(metricsPort)")
            if scrape?.status != 200 { Thread.sleep(forTimeInterval: 0.2) }
        }
        #expect(scrape?.status == 200)
        seen.add("/metrics", scrape?.text ?? "")
        daemon.signal(SIGTERM)
        let status = daemon.waitForExit(60)
        #expect(status == 0, "\(daemon.stderr.suffix(6000))")
        subscriber.stop()
        seen.add("serve stdout", daemon.stdout)
        seen.add("serve stderr (-v)", daemon.stderr)
        #expect(daemon.stderr.contains("info: ") || daemon.stderr.contains("debug: "), "-v showed no log lines")
        for message in subscriber.messages { seen.add("MQTT \(message.topic)", message.text) }
        #expect(subscriber.messages.count > 20)

        // Files serve refuses: refused broker URLs, unusable inputs, a YAML error.
        let refused: [(String, String)] = [
            ("a broker URL with a wrong scheme", "mqtt: {broker: \"http://user:Sec13WrongScheme@127.0.0.1:1883\"}\ncameras: [{name: a, input: synthetic:size=64x48, codes: [qr]}]\n"),
            ("a ws:// broker", "mqtt: {broker: \"ws://user:Sec14WsBroker@127.0.0.1/mqtt\"}\ncameras: [{name: a, input: synthetic:size=64x48, codes: [qr]}]\n"),
            ("a broker query token", "mqtt: {broker: \"mqtt://127.0.0.1:1883/?token=Sec15BrokerQuery\"}\ncameras: [{name: a, input: synthetic:size=64x48, codes: [qr]}]\n"),
            ("an input with @ : / in its password", "mqtt: {broker: mqtt://127.0.0.1:1}\ncameras: [{name: a, input: \"\(failing[8].1)\", codes: [qr]}]\n"),
            ("an input with no host", "mqtt: {broker: mqtt://127.0.0.1:1}\ncameras: [{name: a, input: \"rtsp://admin:Sec19Unusable@/live\", codes: [qr]}]\n"),
            ("a YAML error on a password's line", "mqtt: {broker: mqtt://127.0.0.1:1}\ncameras:\n  - input: \"rtsp://admin:Sec18Yaml@cam/x\n"),
        ]
        for (i, (what, text)) in refused.enumerated() {
            let file = dir.appendingPathComponent("refused\(i).yaml")
            try text.write(to: file, atomically: true, encoding: .utf8)
            for arguments in [["--check"], []] {
                let run = try CLI.run(["serve", "--config", file.path] + arguments, environment: environment)
                // A broker query passes --check and is refused when the client is made (exit 1):
                // --check's parity is issue #30's item 9. Here only what is shown matters.
                if what != "a broker query token" { #expect(run.status == 64, "\(what): \(run.stderr)") }
                seen.add("serve \(arguments) on \(what): stderr", run.stderr)
                seen.add("serve \(arguments) on \(what): stdout", run.stdout)
            }
        }

        let leaks = seen.leaks(of: secrets)
        #expect(leaks.isEmpty, "\(leaks.joined(separator: "\n"))")
        // The channels were searched with something in them: the redacted forms show.
        let all = seen.channels.map(\.1).joined(separator: "\n")
        #expect(all.contains("rtsp://admin:***@127.0.0.1:\(closed)/stream"), "no redacted URL was shown at all")
        #expect(all.contains("token=***"))
    }
}
