import Foundation
import Testing
import AppTestSupport

/// A run that fails or crashes never destroys what was there before (issue #17, class 5): what
/// takes more than one run, a kill or a closed pipe. A single refused run that must leave a file
/// intact is a row of `BadInputTableTests`.
@Suite struct OutputSafetyTests {
    let support = SnapWatchRecordTests()
    static let scene = "synthetic:size=160x120,fps=10,frames=8"

    func bytes(_ url: URL) throws -> Data { try Data(contentsOf: url) }

    /// Records `Self.scene` to `name` in `dir`; returns the file and its bytes.
    func recorded(_ name: String, in dir: URL) throws -> (url: URL, bytes: Data) {
        let url = dir.appendingPathComponent(name)
        #expect(try CLI.run(["record", "-o", url.path, "--input", Self.scene]).status == 0)
        return (url, try bytes(url))
    }

    /// A failed overwrite leaves nothing beside the file but the lock, and a complete one replaces it.
    @Test func failedOverwriteLeavesNoLeftoversAndACompleteOneReplaces() throws {
        let dir = try support.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (out, before) = try recorded("keep.avi", in: dir)
        let typo = try CLI.run(["record", "-o", out.path, "--overwrite", "--input", dir.appendingPathComponent("typo.mp4").path])
        #expect(typo.status == 1)
        #expect(try bytes(out) == before)
        // Nothing is left beside it but the lock file.
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted()
        #expect(names == [".keep.avi.lock", "keep.avi"])
        // A complete new recording does replace it.
        let replaced = try CLI.run(["record", "-o", out.path, "--overwrite", "--input", "synthetic:size=160x120,fps=10,frames=3"])
        #expect(replaced.status == 0, "\(replaced.stderr)")
        #expect(try support.movieFrames(out).declared == 3)
    }

    @Test func aSecondRecorderToTheSamePathIsRefused() throws {
        let dir = try support.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("busy.avi")
        let (first, stdout, _) = try support.start(["record", "-o", out.path, "--input", "synthetic:size=160x120,fps=10", "--realtime", "--json"])
        let firstLine = stdout.fileHandleForReading.availableData  // the `recording` event: it holds the lock
        #expect(!firstLine.isEmpty)
        let second = try CLI.run(["record", "-o", out.path, "--overwrite", "--input", Self.scene])
        #expect(second.status == 1)
        #expect(second.stderr.contains("Another cvcam is recording to"), "\(second.stderr)")
        kill(first.processIdentifier, SIGINT)
        first.waitUntilExit()
        #expect(first.terminationStatus == 0)
        #expect(try support.movieFrames(out).declared > 0)
    }

    /// A recorder killed outright (power loss, SIGKILL) with nothing at its path before leaves a
    /// playable file under the name asked for; only a file being replaced is recorded beside it.
    @Test func aKilledRecorderLeavesAPlayableFileUnderItsName() throws {
        let dir = try support.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("killed.avi")
        let (process, _, _) = try support.start([
            "record", "-o", out.path, "--input", "synthetic:size=320x240,fps=20", "--realtime", "--fragment-interval", "0.5",
            "--json",
        ])
        support.wait(for: process) {
            ((try? FileManager.default.attributesOfItem(atPath: out.path)[.size] as? Int) ?? 0) > 20_000
        }
        #expect(process.isRunning)
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(try support.movieFrames(out).decoded > 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".recording.avi") }.isEmpty)
    }

    /// `cvcam record … | true`: the reader is gone, the recording still gets every frame.
    @Test func aClosedStdoutDoesNotCostTheRecording() throws {
        let dir = try support.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("piped.avi")
        let process = Process()
        process.executableURL = CLI.binary
        process.arguments = ["record", "-o", out.path, "--input", "synthetic:size=160x120,fps=10,frames=25", "--json"]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try pipe.fileHandleForReading.close()
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationReason == .exit && process.terminationStatus == 0)
        let probe = Process()
        probe.executableURL = URL(fileURLWithPath: "/usr/bin/ffprobe")
        probe.arguments = ["-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", out.path]
        let probeOut = Pipe()
        probe.standardOutput = probeOut
        try probe.run()
        let text = String(decoding: probeOut.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        probe.waitUntilExit()
        #expect(text.trimmingCharacters(in: .whitespacesAndNewlines) == "25")
    }

    @Test func snapOverwriteReplacesAPhotoAndNamesTheInputByFileNameOnly() throws {
        let dir = try support.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("photo.jpg")
        try Data("old photo".utf8).write(to: out)
        let replaced = try CLI.run(["snap", "-o", out.path, "--overwrite", "--input", SnapWatchRecordTests.face])
        #expect(replaced.status == 0, "\(replaced.stderr)")
        let photo = try bytes(out)
        #expect(photo.starts(with: [0xFF, 0xD8]))
        // EXIF names the input by its file name only, never by its local folder.
        let folder = URL(fileURLWithPath: SnapWatchRecordTests.face).deletingLastPathComponent().path
        #expect(photo.range(of: Data(folder.utf8)) == nil)
        #expect(photo.range(of: Data("astronaut.png".utf8)) != nil)
    }

    @Test func twoWatchRunsIntoOneFolderKeepEverySnapshot() throws {
        let dir = try support.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let arguments = ["watch", "--dir", dir.path, "--input", SnapWatchRecordTests.faceScene, "--pre-frames", "1"]
        #expect(try CLI.run(arguments).status == 0)
        let first = try FileManager.default.contentsOfDirectory(atPath: dir.path)
        #expect(first.count == 2)
        #expect(try CLI.run(arguments).status == 0)
        let both = try FileManager.default.contentsOfDirectory(atPath: dir.path)
        #expect(both.count == 2 * first.count)
        #expect(Set(first).isSubset(of: Set(both)))
    }
}
