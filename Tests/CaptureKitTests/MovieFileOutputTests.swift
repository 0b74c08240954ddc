@testable import CaptureKit
@testable import CaptureVision
import CaptureKitTesting
import Dispatch
import Foundation
import Testing

@Suite(.serialized) struct MovieFileOutputTests {
    /// Records `frames` synthetic frames (as fast as they encode) and returns what the delegate saw.
    private func record(
        frames: Int, to url: URL, configure: (CaptureMovieFileOutput) -> Void = { _ in }, calls: (any FileSystemCalls)? = nil
    ) throws -> (RecordingEvents, CaptureMovieFileOutput) {
        let movie = calls.map { CaptureMovieFileOutput(fileCalls: $0) } ?? CaptureMovieFileOutput()
        configure(movie)
        let events = RecordingEvents()
        try movie.startRecording(to: url, recordingDelegate: events)
        #expect(movie.isRecording)
        let session = try PhotoTestSupport.runningSession(
            movie, scene: PhotoTestSupport.scene(frameCount: frames), pacing: .asFastAsPossible)
        #expect(events.wait())
        _ = session.waitUntilStopped(timeout: 30)
        #expect(!movie.isRecording)
        return (events, movie)
    }

    @Test func aRecordingHoldsEveryFrameAndReportsWhyItEnded() throws {
        let folder = try PhotoTestSupport.temporaryFolder("movie")
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appendingPathComponent("clip.avi")
        let (events, movie) = try record(frames: 45, to: url)
        #expect(events.events == ["didStart", "didFinish"])
        #expect(events.error?.code == .sessionWasStopped)
        #expect(movie.droppedFrameCount == 0)
        let read = try PhotoTestSupport.countFrames(url)
        #expect(read.count == 45)
        #expect(read.size == .init(width: 320, height: 240))
        // A second recording to the same name is refused through the delegate, without didStart.
        let (again, _) = try record(frames: 5, to: url)
        #expect(again.events == ["didFinish"])
        #expect(again.error?.code == .writeFailed && again.error?.errno == EEXIST)
    }

    @Test func stopRecordingEndsWithoutAnError() throws {
        let folder = try PhotoTestSupport.temporaryFolder("movie-stop")
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appendingPathComponent("stop.avi")
        let movie = CaptureMovieFileOutput()
        let session = try PhotoTestSupport.runningSession(movie)
        defer { try? session.stopRunning() }
        let events = RecordingEvents()
        try movie.startRecording(to: url, recordingDelegate: events)
        do {
            try movie.startRecording(to: folder.appendingPathComponent("other.avi"), recordingDelegate: events)
            Issue.record("a second startRecording should throw")
        } catch {
            #expect(error.code == .recordingInProgress)
        }
        while movie.recordedDuration.seconds < 0.3 { Thread.sleep(forTimeInterval: 0.02) }
        movie.stopRecording()
        #expect(events.wait())
        #expect(events.events == ["didStart", "didFinish"])
        #expect(events.error == nil)
        #expect(try PhotoTestSupport.countFrames(url).count >= 9)
    }

    @Test func eachLimitStopsTheRecordingWithItsReason() throws {
        let folder = try PhotoTestSupport.temporaryFolder("movie-limits")
        defer { try? FileManager.default.removeItem(at: folder) }

        let duration = folder.appendingPathComponent("duration.avi")
        let (d, _) = try record(frames: 90, to: duration) { $0.maxRecordedDuration = MediaTime(value: 1, timescale: 1) }
        #expect(d.error?.code == .maximumDurationReached)
        #expect(try PhotoTestSupport.countFrames(duration).count == 30)

        let size = folder.appendingPathComponent("size.avi")
        let limit: Int64 = 300_000
        let (s, _) = try record(frames: 90, to: size) { $0.maxRecordedFileSize = limit }
        #expect(s.error?.code == .maximumFileSizeReached)
        let bytes = try FileManager.default.attributesOfItem(atPath: size.path)[.size] as? Int64 ?? 0
        #expect(bytes <= limit && bytes > limit / 2)
        let sizeFrames = try PhotoTestSupport.countFrames(size).count
        #expect(sizeFrames > 0 && sizeFrames < 90)

        // Free space reported by the seam shrinks as the recording grows (the real call is statvfs).
        let calls = FailingFileCalls()
        calls.freeSpace = 1_000_000
        let disk = folder.appendingPathComponent("disk.avi")
        let (f, _) = try record(frames: 90, to: disk, configure: { $0.minFreeDiskSpaceLimit = 700_000 }, calls: calls)
        #expect(f.error?.code == .diskSpaceLimitReached)
        #expect(calls.bytesWritten <= 300_000 + 2048)
        let diskFrames = try PhotoTestSupport.countFrames(disk).count
        #expect(diskFrames > 0 && diskFrames < 90)
    }

    @Test func aWriteFailureMidRecordingKeepsTheFileUpToTheLastFragment() throws {
        let folder = try PhotoTestSupport.temporaryFolder("movie-full")
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appendingPathComponent("full.avi")
        let calls = FailingFileCalls()
        calls.failWritesAfter = 3_000_000
        let (events, _) = try record(frames: 150, to: url, configure: { $0.movieFragmentInterval = MediaTime(value: 1, timescale: 2) }, calls: calls)
        #expect(events.events == ["didStart", "didFinish"])
        #expect(events.error?.code == .writeFailed && events.error?.errno == ENOSPC)
        let frames = try PhotoTestSupport.countFrames(url).count
        #expect(frames >= 15 && frames < 150)  // at least one half-second fragment was on disk before the failure
    }

    @Test func aRecorderKilledWithSIGKILLLeavesEveryFrameUpToTheLastFragment() throws {
        let probe = try #require(Self.probeExecutable(), "build the CaptureProbe helper: swift build --build-tests")
        let folder = try PhotoTestSupport.temporaryFolder("movie-kill")
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appendingPathComponent("killed.avi")
        let child = Process()
        child.executableURL = probe
        child.arguments = ["record", url.path, "1", "fast", "60"]
        let pipe = Pipe()
        child.standardOutput = pipe
        try child.run()
        // Read "frames <n>" lines until 2.5 fragments (75 frames at 30 fps) are recorded, then kill.
        var seen = 0
        var buffer = ""
        while seen < 75 {
            let chunk = pipe.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            buffer += String(decoding: chunk, as: UTF8.self)
            for line in buffer.split(separator: "\n") where line.hasPrefix("frames ") { seen = max(seen, Int(line.dropFirst(7)) ?? 0) }
        }
        kill(child.processIdentifier, SIGKILL)
        child.waitUntilExit()
        #expect(child.terminationReason == .uncaughtSignal)
        #expect(seen >= 75)
        let lastFragment = seen / 30 * 30
        let read = try PhotoTestSupport.countFrames(url)
        #expect(read.count >= lastFragment, "killed after \(seen) frames, read \(read.count)")
        #expect(read.size == .init(width: 640, height: 480))
        // ffprobe, a second independent reader, also opens the killed file.
        let probed = try PhotoTestSupport.run(
            "/usr/bin/ffprobe", ["-v", "error", "-count_frames", "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", url.path])
        #expect((Int(probed.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) >= lastFragment)
    }

    static func probeExecutable() -> URL? {
        var candidates: [URL] = []
        if let exe = Bundle.main.executableURL { candidates.append(exe.deletingLastPathComponent().appendingPathComponent("CaptureProbe")) }
        let build = PhotoTestSupport.packageRoot.appendingPathComponent(".build")
        candidates.append(build.appendingPathComponent("debug/CaptureProbe"))
        candidates.append(build.appendingPathComponent("release/CaptureProbe"))
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }
}
