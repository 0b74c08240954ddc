import Foundation
import Testing
import AppTestSupport

/// `--input rtsp://…` / `http://…` end to end, against real servers on loopback.
@Suite(.serialized) struct NetworkStreamCLITests {
    struct Run {
        var status: Int32
        var stdout: String
        var stderr: String
        var started: Double
    }

    /// Runs cvcam, and sends SIGINT once `interruptAfter` seconds have passed since the
    /// `stream:` start line (or since launch, if it never comes); `during` runs meanwhile with
    /// the seconds since the start line.
    static func run(
        _ arguments: [String], environment: [String: String] = [:], interruptAfter: Double,
        during: ((Double) -> Void)? = nil
    ) throws -> Run {
        let (process, out, err) = CLI.process(arguments, environment: environment)
        let launched = Date()
        try process.run()
        nonisolated(unsafe) var outData = Data()
        nonisolated(unsafe) var errData = Data()
        let lock = NSLock()
        let outReader = Thread { outData = out.fileHandleForReading.readDataToEndOfFile() }
        let errReader = Thread {
            while case let chunk = err.fileHandleForReading.availableData, !chunk.isEmpty {
                lock.withLock { errData.append(chunk) }
            }
        }
        outReader.start()
        errReader.start()
        // Wait for the start line: the stream is open and streaming is about to start.
        var started = Date()
        while process.isRunning && Date().timeIntervalSince(launched) < 30 {
            if lock.withLock({ String(decoding: errData, as: UTF8.self).contains("stream: ") }) {
                started = Date()
                break
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
        during?(Date().timeIntervalSince(started))
        while process.isRunning && Date().timeIntervalSince(started) < interruptAfter {
            Thread.sleep(forTimeInterval: 0.05)
        }
        if process.isRunning { process.interrupt() }
        process.waitUntilExit()
        while !outReader.isFinished || !errReader.isFinished { Thread.sleep(forTimeInterval: 0.005) }
        return Run(
            status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
            stderr: String(decoding: errData, as: UTF8.self), started: started.timeIntervalSince(launched))
    }

    static func summary(_ stdout: String) throws -> [String: Any] {
        let line = try #require(stdout.split(separator: "\n").last { $0.contains("\"type\":\"summary\"") })
        return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
    }

    @Test func credentialsNeverAppearAndTheStreamsFormatIsReported() throws {
        guard
            let server = try NetworkStreamTestServer.start(
                .rtsp, arguments: ["--user", "alice", "--password", "Sesame42", "--fps", "15"])
        else { return }
        defer { server.stop() }
        // From the URL, JSON mode.
        let json = try Self.run(["scan", "--input", server.url(user: "alice", password: "Sesame42"), "--json", "-v"], interruptAfter: 3)
        #expect(json.status == 0, "stderr: \(json.stderr)")
        #expect(!(json.stdout + json.stderr).contains("Sesame42"))
        let summary = try Self.summary(json.stdout)
        let input = try #require(summary["input"] as? [String: Any])
        #expect(input["kind"] as? String == "stream")
        #expect(input["name"] as? String == "Network camera rtsp://alice:***@127.0.0.1:\(server.port)/stream")
        #expect(input["size"] as? String == "320x240")
        #expect(input["frameRate"] as? Double == 15)
        #expect((summary["frames"] as? Int ?? 0) > 10)
        #expect(json.stderr.contains("stream: rtsp://alice:***@127.0.0.1:\(server.port)/stream mjpe 320x240 at 15.00 fps (reported by the stream)"))

        // From the environment, text mode.
        let text = try Self.run(
            ["faces", "--input", server.url()], environment: ["CVCAM_STREAM_USER": "alice", "CVCAM_STREAM_PASSWORD": "Sesame42"],
            interruptAfter: 2)
        #expect(text.status == 0, "stderr: \(text.stderr)")
        #expect(!(text.stdout + text.stderr).contains("Sesame42"))
        #expect(text.stderr.contains("stream: rtsp://alice:***@127.0.0.1"))

        // Wrong password: exit 1, the error redacted.
        let wrong = try CLI.run(["scan", "--input", server.url(user: "alice", password: "Wrong9876"), "--connect-timeout", "5"])
        #expect(wrong.status == 1)
        #expect(!(wrong.stdout + wrong.stderr).contains("Wrong9876"))
        #expect(wrong.stderr.contains("cannot open rtsp://alice:***@127.0.0.1:\(server.port)/stream"))
    }

    /// https:// (self-signed certificate made at run time) with credentials in the URL: frames
    /// arrive and the password is in neither stdout nor stderr.
    @Test func httpsWithCredentialsDeliversFramesAndHidesThePassword() throws {
        guard
            let server = try NetworkStreamTestServer.start(
                .mjpeg, arguments: ["--user", "user", "--password", "secret", "--fps", "10"], tls: true)
        else { return }
        defer { server.stop() }
        let url = server.url(user: "user", password: "secret")
        #expect(url == "https://user:secret@127.0.0.1:\(server.port)/stream")
        let run = try Self.run(["scan", "--input", url, "--json", "-v"], interruptAfter: 3)
        #expect(run.status == 0, "stderr: \(run.stderr)")
        #expect(!(run.stdout + run.stderr).contains("secret"))
        #expect(run.stderr.contains("stream: https://user:***@127.0.0.1:\(server.port)/stream mjpe 320x240"), "\(run.stderr)")
        let summary = try Self.summary(run.stdout)
        let input = try #require(summary["input"] as? [String: Any])
        #expect(input["size"] as? String == "320x240")
        #expect((summary["frames"] as? Int ?? 0) > 10, "summary: \(summary)")
    }

    /// What Docs/cli.md says about certificates: cvcam accepts any (FFmpeg's tls_verify is off),
    /// and a user asks for verification of https:// through OpenCV's OPENCV_FFMPEG_CAPTURE_OPTIONS:
    /// then the self-signed certificate is refused, unless it is given as the CA.
    @Test func httpsVerificationIsOffUnlessAskedForThroughOpenCV() throws {
        guard let server = try NetworkStreamTestServer.start(.mjpeg, arguments: ["--fps", "10"], tls: true) else { return }
        defer { server.stop() }
        let certificate = try #require(server.certificatePath)
        let refused = try CLI.run(
            ["scan", "--input", server.url(), "--connect-timeout", "3"],
            environment: ["OPENCV_FFMPEG_CAPTURE_OPTIONS": "tls_verify;1"])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("cannot open https://127.0.0.1:\(server.port)/stream"), "\(refused.stderr)")
        let trusted = try Self.run(
            ["scan", "--input", server.url(), "--json"],
            environment: ["OPENCV_FFMPEG_CAPTURE_OPTIONS": "tls_verify;1|ca_file;\(certificate)"], interruptAfter: 2)
        #expect(trusted.status == 0, "stderr: \(trusted.stderr)")
        #expect((try Self.summary(trusted.stdout)["frames"] as? Int ?? 0) > 5)
    }

    /// rtsps:// to GStreamer's RTSP server with TLS.
    @Test func rtspsDeliversFrames() throws {
        guard let server = try NetworkStreamTestServer.start(.rtsp, arguments: ["--fps", "15"], tls: true) else { return }
        defer { server.stop() }
        let run = try Self.run(["scan", "--input", server.url(), "--json"], interruptAfter: 3)
        #expect(run.status == 0, "stderr: \(run.stderr)")
        #expect(run.stderr.contains("stream: rtsps://127.0.0.1:\(server.port)/stream mjpe 320x240 at 15.00 fps"), "\(run.stderr)")
        let summary = try Self.summary(run.stdout)
        #expect((summary["frames"] as? Int ?? 0) > 20, "summary: \(summary)")
    }

    @Test func aClosedPortFailsFastWithExit1() throws {
        let port = closedLoopbackPort()
        let start = Date()
        let result = try CLI.run(["scan", "--input", "rtsp://eve:Hidden77@127.0.0.1:\(port)/live", "--connect-timeout", "2"])
        // Not retried: one refused connection and out (a busy box gets slack beyond the 2 s).
        #expect(Date().timeIntervalSince(start) < 15)
        #expect(result.status == 1)
        #expect(result.stderr.contains("cannot open rtsp://eve:***@127.0.0.1:\(port)/live: "), "\(result.stderr)")
        #expect(!(result.stdout + result.stderr).contains("Hidden77"))
    }

    @Test func badStreamOptionsAreUsageErrors() throws {
        let noHost = try CLI.run(["scan", "--input", "rtsp://bob:Pw445566@/x"])
        #expect(noHost.status == 64)
        #expect(noHost.stderr.contains("names no host") && !noHost.stderr.contains("Pw445566"), "\(noHost.stderr)")
        let sized = try CLI.run(["scan", "--input", "rtsp://cam/live", "--size", "640x480"])
        #expect(sized.status == 64)
        #expect(sized.stderr.contains("do not apply to a network camera"))
        let timeout = try CLI.run(["scan", "--input", "rtsp://cam/live", "--connect-timeout", "0"])
        #expect(timeout.status == 64)
    }

    @Test func theRunContinuesAfterTheServerRestarts() throws {
        guard let first = try NetworkStreamTestServer.start(.mjpeg, arguments: ["--fps", "10"]) else { return }
        let port = first.port
        nonisolated(unsafe) var second: NetworkStreamTestServer?
        nonisolated(unsafe) var sentBeforeKill: Int?
        // Killed 2.5 s in and back at once; the backoff (0.5, 1, 2, 4 s) finds it within about
        // 8 s even on a loaded machine, leaving several seconds of frames before SIGINT at 18 s.
        let result = try Self.run(["scan", "--input", first.url(), "--json"], interruptAfter: 18) { sinceStart in
            Thread.sleep(forTimeInterval: max(0, 2.5 - sinceStart))
            sentBeforeKill = first.stopCountingFrames()
            second = try? NetworkStreamTestServer.start(.mjpeg, port: port, arguments: ["--fps", "10"])
        }
        let sentAfterRestart = second?.stopCountingFrames()
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let before = try #require(sentBeforeKill)
        let after = try #require(sentAfterRestart)
        let frames = try #require(try Self.summary(result.stdout)["frames"] as? Int)
        // cvcam was the only client: the restarted server streaming for seconds means cvcam
        // reconnected, and more frames than the first server ever sent means they were used.
        #expect(after >= 20, "the restarted server sent \(after) frames")
        #expect(frames > before + 10, "\(frames) frames; the first server sent \(before)")
    }
}
