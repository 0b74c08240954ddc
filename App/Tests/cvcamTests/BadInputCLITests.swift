import Foundation
import Testing
import AppTestSupport

/// The built binary where a bad input needs more than one run to judge: frames of mixed sizes
/// read back from the movie, and signals. Single runs on bad input are rows of
/// `BadInputTableTests` (issue #17).
@Suite struct BadInputCLITests {
    /// Runs cvcam, sending `signal` after `signalAfter` seconds when given; kills it after `limit`.
    static func run(_ arguments: [String], signal: Int32? = nil, signalAfter: Double = 1, limit: Double = 20)
        throws -> (status: Int32, stderr: String, seconds: Double)
    {
        let process = Process()
        process.executableURL = CLI.binary
        process.arguments = arguments
        let err = Pipe()
        process.standardError = err
        process.standardOutput = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        let started = Date()
        try process.run()
        nonisolated(unsafe) var errData = Data()
        let reader = Thread { errData = err.fileHandleForReading.readDataToEndOfFile() }
        reader.start()
        var signalled: Date?
        while process.isRunning && Date().timeIntervalSince(started) < limit {
            if let signal, signalled == nil, Date().timeIntervalSince(started) > signalAfter {
                kill(process.processIdentifier, signal)
                signalled = Date()
            }
            Thread.sleep(forTimeInterval: 0.01)
        }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        while !reader.isFinished { Thread.sleep(forTimeInterval: 0.005) }
        return (process.terminationStatus, String(decoding: errData, as: UTF8.self),
                Date().timeIntervalSince(signalled ?? started))
    }

    @Test func intactVideoWhoseClockStartsAtOneHourExitsZero() throws {
        // OpenCV counts 36020 frames in this 20-frame file; it used to end "truncated or corrupt" (exit 1).
        let path = CLI.packageRoot.appendingPathComponent("Tests/Fixtures/video/clock-at-1h.mkv").path
        let r = try CLI.run(["faces", "--input", path])
        #expect(r.status == 0, "stderr: \(r.stderr)")
        #expect(r.stderr.contains("summary: 20 frames"), "\(r.stderr)")
    }

    /// An AVI has one frame size: frames of other sizes are scaled to the first one's, with a warning.
    @Test func recordFromMixedSizesWritesOneSize() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("cvcam-mixed-\(UUID())")
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("in"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let ffmpeg = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        for (i, size) in ["32x32", "64x48", "80x60"].enumerated() {
            _ = try CLI.run(
                ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=\(size)", "-frames:v", "1",
                 dir.appendingPathComponent("in/img\(i).png").path], executable: ffmpeg)
        }
        let movie = dir.appendingPathComponent("m.avi").path
        let r = try Self.run(["record", "--input", dir.appendingPathComponent("in").path, "-o", movie])
        #expect(r.status == 0, "stderr: \(r.stderr)")
        #expect(r.stderr.contains("scaling frames to the movie's 32x32"))
        let probe = try CLI.run(["-v", "error", "-i", movie, "-f", "framemd5", "-"], executable: ffmpeg)
        #expect(probe.stderr.isEmpty)
        #expect(probe.stdout.split(separator: "\n").filter { $0.hasPrefix("0,") }.count == 3)
    }

    /// A signal at any moment of the start-up ends the run: before the handlers are installed
    /// the default action does (130); after, the stop does (0). A dispatch signal source left a
    /// window (the signal set to SIG_IGN before the source listened) where it was lost and the
    /// run went on for good.
    @Test func aSignalAtAnyMomentOfTheStartEndsTheRun() throws {
        for step in 0..<10 {
            let r = try Self.run(
                ["faces", "--input", "synthetic:size=64x48", "--quiet"], signal: SIGINT, signalAfter: 0.2 * Double(step),
                limit: 60)
            #expect(r.status == 0 || r.status == 130, "signal after \(0.2 * Double(step)) s: status \(r.status); \(r.stderr)")
        }
    }

    /// A signal ends an endless run: the run stops at once, or is ended 5 s after the signal
    /// (`SignalStop`); the bound leaves a busy box room, and a run that ignored the signal would
    /// never end.
    @Test(arguments: [SIGINT, SIGTERM]) func signalEndsAnEndlessRun(signal: Int32) throws {
        let r = try Self.run(
            ["faces", "--input", "synthetic:size=64x48", "--quiet"], signal: signal, signalAfter: 1.5, limit: 60)
        #expect(r.seconds < 30, "took \(r.seconds) s after the signal; stderr: \(r.stderr)")
        #expect(r.status == 0 || r.status == 128 + signal || r.status == 130, "status \(r.status); stderr: \(r.stderr)")  // 130: stopped while starting
    }
}
