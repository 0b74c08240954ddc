import ArgumentParser
import CaptureKit
import Foundation
import Testing

@testable import CaptureJobs
@testable import CapturePreview
@testable import CaptureServe
@testable import CVCamCommands
import AppTestSupport

/// `cvcam snap`, `watch` and `record`: the built binary end to end on fixture and synthetic
/// inputs, the files it writes read back, SIGINT handling, and the validation messages.
@Suite struct SnapWatchRecordTests {
    static let face = CLI.fixture("images/astronaut.png")
    /// 4 s at 10 fps; the face comes into the frame at about 0.8 s (it enters, held for three
    /// frames, at 1.0 s) and stays to the end.
    static let faceScene = "synthetic:size=640x480,fps=10,frames=40,image=\(face)"

    func temporaryFolder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("cvcam-swr-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// The `--json` lines, each checked to carry schema 1.
    func events(_ result: CLI.Result) throws -> [[String: Any]] {
        try result.lines.map { line in
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not JSON: \(line)")
            #expect(object["schema"] as? Int == 1, "\(line)")
            return object
        }
    }

    /// The JSON record in a JPEG's EXIF UserComment ("ASCII\0\0\0" then the JSON object).
    func userComment(_ url: URL) throws -> [String: Any] {
        let bytes = [UInt8](try Data(contentsOf: url))
        let marker: [UInt8] = Array("ASCII".utf8) + [0, 0, 0, UInt8(ascii: "{")]
        let start = try #require(
            (0..<(bytes.count - marker.count)).first { Array(bytes[$0..<$0 + marker.count]) == marker }, "no UserComment in \(url.path)"
        ) + marker.count - 1
        var depth = 0
        var end = start
        for i in start..<bytes.count {
            if bytes[i] == UInt8(ascii: "{") { depth += 1 }
            if bytes[i] == UInt8(ascii: "}") { depth -= 1 }
            if depth == 0 {
                end = i
                break
            }
        }
        return try #require(try JSONSerialization.jsonObject(with: Data(bytes[start...end])) as? [String: Any])
    }

    /// Frames in a movie, read back through CaptureKit (`CaptureDevice(videoFileAtPath:)`), each decoded.
    func movieFrames(_ url: URL) throws -> (declared: Int, decoded: Int, size: CaptureDevice.Dimensions) {
        let device = try CaptureDevice(videoFileAtPath: url.path, pacing: .asFastAsPossible)
        let source = try #require(device.source as? VideoFileSource)
        try source.open(format: device.activeFormat, frameDuration: MediaTime(value: 1, timescale: 10))
        defer { source.close() }
        var decoded = 0
        while let frame = try source.nextFrame(isCancelled: { false }) {
            #expect(frame.pixelBuffer.width == device.activeFormat.dimensions.width)
            decoded += 1
        }
        return (source.declaredFrameCount, decoded, device.activeFormat.dimensions)
    }

    // MARK: snap

    @Test func snapOfAFixtureImageWritesAReadableJPEGOfItsSize() throws {
        let dir = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("astronaut.jpg")
        let result = try CLI.run(["snap", "-o", out.path, "--input", Self.face, "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let lines = try events(result)
        let snapshot = try #require(lines.first { $0["type"] as? String == "snapshot" })
        #expect(snapshot["path"] as? String == out.path)
        #expect(snapshot["width"] as? Int == 512 && snapshot["height"] as? Int == 512)
        #expect(lines.last?["type"] as? String == "summary" && lines.last?["photos"] as? Int == 1)
        let image = try ImageFolderSource.decode(out.path)
        #expect(image.width == 512 && image.height == 512)
        // The decoded photo is the fixture (JPEG loss aside): compare a few pixels.
        let original = try ImageFolderSource.decode(Self.face)
        for (x, y) in [(100, 100), (256, 256), (400, 50)] {
            for c in 0..<3 {
                let a = Int(image.baseAddress.load(fromByteOffset: y * image.bytesPerRow + x * 3 + c, as: UInt8.self))
                let b = Int(original.baseAddress.load(fromByteOffset: y * original.bytesPerRow + x * 3 + c, as: UInt8.self))
                #expect(abs(a - b) < 24, "pixel \(x),\(y) channel \(c): \(a) vs \(b)")
            }
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path) == ["astronaut.jpg"])
    }

    /// `snap --photo-size max --flash` on the emulated V4L2 camera (the emulator library
    /// preloaded into the cvcam child only): streaming 640x480, the photo comes at the camera's
    /// largest size, and the flash LED went to flash, strobed, and back to off.
    @Test func snapAtMaxSizeWithFlashOnTheEmulatedCamera() throws {
        let emulator = CLI.emulatorLibrary
        try #require(FileManager.default.fileExists(atPath: emulator.path), "the package builds \(emulator.path)")
        let dir = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let control = dir.appendingPathComponent("emulator.control")
        try Data("extra-controls\ncontrol-log\n".utf8).write(to: control)
        let environment = [
            "LD_PRELOAD": emulator.path, "V4L2_EMULATOR_IMAGES": CLI.fixture("images"),
            "V4L2_EMULATOR_CONTROL": control.path, "CVCAM_V4L2_DEVICES": "/dev/video-emulated0:/dev/video-emulated1",
        ]
        let out = dir.appendingPathComponent("door.jpg")
        let result = try CLI.run(
            ["snap", "-o", out.path, "--device", "/dev/video-emulated0", "--size", "640x480", "--photo-size", "max", "--flash", "--json"],
            environment: environment)
        #expect(result.status == 0, "\(result.stderr)")
        let lines = try events(result)
        let snapshot = try #require(lines.first { $0["type"] as? String == "snapshot" })
        #expect(snapshot["width"] as? Int == 1280 && snapshot["height"] as? Int == 720)
        let summary = try #require(lines.last)
        #expect((summary["input"] as? [String: Any])?["size"] as? String == "640x480")
        let image = try ImageFolderSource.decode(out.path)
        #expect(image.width == 1280 && image.height == 720)
        // Control writes the camera saw: LED mode flash (1), the strobe, LED mode off (0) again.
        let writes = try String(contentsOf: URL(fileURLWithPath: control.path + ".log"), encoding: .utf8)
            .split(separator: "\n").map { $0.split(separator: " ").dropFirst().joined(separator: "=") }
        let led = String(format: "0x%08x", CaptureDevice.Control.flashLEDMode.rawValue)
        let strobe = String(format: "0x%08x", CaptureDevice.Control.flashStrobe.rawValue)
        #expect(writes == ["\(led)=1", "\(strobe)=1", "\(led)=0"])

        // A source without a flash: refused before anything is captured; exit 1, nothing written.
        let plain = try CLI.run(["snap", "-o", dir.appendingPathComponent("x.jpg").path, "--input", Self.face, "--flash"])
        #expect(plain.status == 1)
        #expect(plain.stderr.contains("has no flash"), "\(plain.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("x.jpg").path))
    }

    @Test func snapCountThreeWritesThreeNumberedPhotosOfDifferentFrames() throws {
        let dir = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("shot.jpg")
        let result = try CLI.run([
            "snap", "-o", out.path, "--count", "3", "--interval", "1", "--input", "synthetic:size=320x240,fps=10,frames=40", "--json",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let snapshots = try events(result).filter { $0["type"] as? String == "snapshot" }
        #expect(snapshots.count == 3)
        let times = snapshots.compactMap { $0["time"] as? Double }.sorted()
        // Presses are 1 s of frame time apart; each photo is the frame 1 to 3 frames after its press.
        #expect(times.count == 3 && times[1] - times[0] >= 0.79 && times[2] - times[1] >= 0.79, "\(times)")
        #expect(times.count == 3 && times[1] - times[0] <= 1.21 && times[2] - times[1] <= 1.21, "\(times)")
        for i in 1...3 {
            let path = dir.appendingPathComponent("shot-\(i).jpg").path
            #expect(snapshots.contains { $0["path"] as? String == path })
            let image = try ImageFolderSource.decode(path)
            #expect(image.width == 320 && image.height == 240)
        }
        #expect(!FileManager.default.fileExists(atPath: out.path))
    }

    @Test func snapWritesPNGWithAJSONSidecar() throws {
        let dir = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("frame.png")
        let result = try CLI.run(["snap", "-o", out.path, "--input", "synthetic:size=320x240,fps=10,frames=10", "-q"])
        #expect(result.status == 0, "\(result.stderr)")
        let image = try ImageFolderSource.decode(out.path)
        #expect(image.width == 320 && image.height == 240)
        let sidecar = try JSONSerialization.jsonObject(with: Data(contentsOf: out.appendingPathExtension("json"))) as? [String: Any]
        #expect(sidecar?["reason"] as? String == "snap")
    }

    @Test func snapWaitingForAFaceTakesItWithTheFaceInTheRecord() throws {
        let dir = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("face.jpg")
        let result = try CLI.run(["snap", "-o", out.path, "--wait-for-face", "--input", Self.faceScene, "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let snapshot = try #require(try events(result).first { $0["type"] as? String == "snapshot" })
        #expect(snapshot["faceIDs"] as? [Int] == [1])
        // The face enters at about 0.8 s; the photo is a frame just after it was seen.
        let time = try #require(snapshot["time"] as? Double)
        #expect(time >= 0.7 && time < 2.0, "\(time)")
        let record = try userComment(out)
        #expect(record["reason"] as? String == "face")
        #expect((record["faces"] as? [[String: Any]])?.first?["faceID"] as? Int == 1)
    }

    @Test func snapWaitingForAFaceThatNeverComesExitsNothingFound() throws {
        let dir = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("none.jpg")
        // An endless face-free camera: --timeout ends it.
        let timedOut = try CLI.run([
            "snap", "-o", out.path, "--wait-for-face", "--timeout", "1", "--input", "synthetic:size=320x240,fps=10", "--realtime",
        ])
        #expect(timedOut.status == 4, "\(timedOut.stderr)")
        #expect(timedOut.stderr.contains("no face was seen"))
        // A finite face-free input ends by itself.
        let ended = try CLI.run(["snap", "-o", out.path, "--wait-for-face", "--input", "synthetic:size=320x240,fps=10,frames=20"])
        #expect(ended.status == 4, "\(ended.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out.path))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).isEmpty)
    }

    // MARK: watch

    @Test func watchTakesOneSnapshotPerNewFaceWithEarlierFramesAndTheRecordInEXIF() throws {
        let dir = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let result = try CLI.run([
            "watch", "--dir", dir.path, "--input", Self.faceScene, "--best-of", "3", "--pre-frames", "2", "--json",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let lines = try events(result)
        let snapshots = lines.filter { $0["type"] as? String == "snapshot" }
        #expect(snapshots.count == 1)
        let snapshot = try #require(snapshots.first)
        #expect(snapshot["reason"] as? String == "newFace")
        #expect(snapshot["faceIDs"] as? [Int] == [1])
        #expect(snapshot["preFrames"] as? Int == 2)
        let path = try #require(snapshot["path"] as? String)
        let url = URL(fileURLWithPath: path)
        #expect(url.deletingLastPathComponent().standardizedFileURL.path == dir.standardizedFileURL.path)
        let image = try ImageFolderSource.decode(path)
        #expect(image.width == 640 && image.height == 480)
        let record = try userComment(url)
        #expect(record["reason"] as? String == "newFace")
        #expect((record["faces"] as? [[String: Any]])?.map { $0["faceID"] as? Int } == [1])
        // Schema 2: the face has the same shape as a `face` event's (box {x, y, w, h}, score).
        #expect(record["schema"] as? Int == 2)
        let face = try #require((record["faces"] as? [[String: Any]])?.first)
        #expect(Set((face["box"] as? [String: Any] ?? [:]).keys) == ["x", "y", "w", "h"])
        #expect(face["score"] is Double && face["bounds"] == nil && face["confidence"] == nil)
        #expect((record["details"] as? [String: Any])?["framesConsidered"] as? Double == 3)
        let base = url.deletingPathExtension().lastPathComponent
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted()
        #expect(files == ["\(base)-pre-01.jpg", "\(base)-pre-02.jpg", "\(base).jpg"])
        #expect(lines.last?["type"] as? String == "summary" && lines.last?["snapshots"] as? Int == 1)
    }

    @Test func watchInIntervalModeTakesASnapshotEverySecondWhileTheFaceStays() throws {
        let dir = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let result = try CLI.run(["watch", "--dir", dir.path, "--input", Self.faceScene, "--every", "1", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let snapshots = try events(result).filter { $0["type"] as? String == "snapshot" }
        // The face is in view from about 0.8 s and enters on its third frame (1.0 s) to the end
        // (3.9 s): snapshots at 1.0, 2.0 and 3.0.
        #expect(snapshots.count == 3)
        #expect(snapshots.allSatisfy { $0["reason"] as? String == "interval" && $0["faceIDs"] as? [Int] == [1] })
        let times = snapshots.compactMap { $0["time"] as? Double }
        #expect(zip(times, times.dropFirst()).allSatisfy { $1 - $0 >= 0.99 }, "\(times)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).count == 3)
    }

    // MARK: record

    @Test func recordOfAFiniteInputHoldsEveryFrame() throws {
        let dir = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("clip.avi")
        let result = try CLI.run(["record", "-o", out.path, "--input", "synthetic:size=320x240,fps=10,frames=25", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let lines = try events(result)
        #expect(lines.first?["type"] as? String == "start")
        #expect(lines.dropFirst().first?["type"] as? String == "recording")
        #expect(lines.dropFirst().first?["width"] as? Int == 320)
        let summary = try #require(lines.last)
        #expect(summary["type"] as? String == "summary")
        #expect(summary["recordedFrames"] as? Int == 25)
        let bytes = try FileManager.default.attributesOfItem(atPath: out.path)[.size] as? Int
        #expect(summary["bytes"] as? Int == bytes)
        let movie = try movieFrames(out)
        #expect(movie.declared == 25 && movie.decoded == 25)
        #expect(movie.size == CaptureDevice.Dimensions(width: 320, height: 240))
    }

    @Test func recordStopsAtItsDurationLimit() throws {
        let dir = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("limited.avi")
        let result = try CLI.run(["record", "-o", out.path, "--duration", "1.5", "--input", "synthetic:size=160x120,fps=10", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let summary = try #require(try events(result).last)
        #expect(summary["ended"] as? String == "maximumDurationReached")
        #expect(try movieFrames(out).decoded == 15)
    }

    /// Everything a process wrote to stderr so far, collected on a background thread.
    final class ErrorLog: @unchecked Sendable {
        // @unchecked: `data` is only touched with `lock` held.
        private let lock = NSLock()
        private var data = Data()
        func append(_ chunk: Data) { lock.withLock { data.append(chunk) } }
        var text: String { lock.withLock { String(decoding: data, as: UTF8.self) } }
    }

    /// Starts the binary with stdout captured, stderr collected and stdin closed.
    func start(_ arguments: [String]) throws -> (Process, Pipe, ErrorLog) {
        let process = Process()
        process.executableURL = CLI.binary
        process.arguments = arguments
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let log = ErrorLog()
        let handle = err.fileHandleForReading
        Thread {
            while case let chunk = handle.availableData, !chunk.isEmpty { log.append(chunk) }
        }.start()
        return (process, out, log)
    }

    /// Waits (polling) until `ready` holds or the process ended; a safety limit of 60 s.
    func wait(for process: Process, until ready: () -> Bool) {
        for _ in 0..<1200 where process.isRunning && !ready() { Thread.sleep(forTimeInterval: 0.05) }
    }

    @Test func sigintDuringRecordLeavesAPlayableFileAndExitsZero() throws {
        let dir = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("live.avi")
        let (process, pipe, _) = try start([
            "record", "-o", out.path, "--input", "synthetic:size=320x240,fps=20", "--realtime", "--fragment-interval", "0.5", "--json",
        ])
        wait(for: process) {
            ((try? FileManager.default.attributesOfItem(atPath: out.path)[.size] as? Int) ?? 0) > 20_000
        }
        #expect(process.isRunning)
        process.interrupt()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let lines = String(decoding: output, as: UTF8.self).split(separator: "\n")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(lines.last!.utf8)) as? [String: Any])
        #expect(summary["type"] as? String == "summary" && summary["schema"] as? Int == 1)
        let recorded = try #require(summary["recordedFrames"] as? Int)
        #expect(recorded > 0)
        let movie = try movieFrames(out)
        #expect(movie.declared == recorded && movie.decoded == recorded)
    }

    @Test func sigintDuringWatchWritesThePendingSnapshotCompletely() throws {
        let dir = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        // An endless camera with the face: a 300-frame best-frame window (30 s) is still open
        // when SIGINT arrives, so the snapshot is decided and written on the way out.
        let (process, pipe, log) = try start([
            "watch", "--dir", dir.path, "--input", "synthetic:size=640x480,fps=10,image=\(Self.face)", "--realtime",
            "--best-of", "300", "--pre-frames", "1", "--json", "--verbose",
        ])
        // --verbose logs the faces the trigger has seen: wait until it has seen face 1.
        wait(for: process) { log.text.contains("faces in view: [1]") }
        #expect(process.isRunning)
        process.interrupt()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let lines = try String(decoding: output, as: UTF8.self).split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        #expect(lines.allSatisfy { $0["schema"] as? Int == 1 })
        let snapshots = lines.filter { $0["type"] as? String == "snapshot" }
        #expect(snapshots.count == 1)
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path)
        #expect(files.count == 2, "\(files)")
        #expect(!files.contains { $0.hasPrefix(".") || $0.hasSuffix(".tmp") }, "\(files)")
        for file in files {
            let image = try ImageFolderSource.decode(dir.appendingPathComponent(file).path)
            #expect(image.width == 640 && image.height == 480)
        }
        if let path = snapshots.first?["path"] as? String {
            let record = try userComment(URL(fileURLWithPath: path))
            #expect(record["reason"] as? String == "newFace")
            #expect(((record["details"] as? [String: Any])?["framesConsidered"] as? Double ?? 0) >= 1)
        }
    }

    // MARK: Validation

    func message<C: ParsableCommand>(_ command: C.Type, _ arguments: [String]) -> String {
        do {
            _ = try C.parseAsRoot(arguments)
            return ""
        } catch {
            return C.message(for: error)
        }
    }

    @Test func validationMessagesNameTheAllowedValues() {
        #expect(message(Snap.self, ["-o", "a.gif"]) == "-o must end in .jpg, .jpeg or .png (got 'a.gif').")
        #expect(message(Snap.self, ["-o", "a.jpg", "--count", "0"]) == "--count must be 1 to 10000 (got 0).")
        #expect(message(Snap.self, ["-o", "a.jpg", "--timeout", "0"]) == "--timeout must be 0.001 to 86400 seconds (got 0).")
        #expect(message(Watch.self, ["--dir", "d", "--min-score", "2"]) == "--min-score must be 0 to 1 (got 2).")
        #expect(message(Watch.self, ["--dir", "d", "--every", "0"]) == "--every must be 0.001 to 86400 seconds (got 0).")
        #expect(message(Watch.self, ["--dir", "d", "--best-of", "0"]) == "--best-of must be 1 to 300 frames (got 0).")
        #expect(message(Record.self, ["-o", "m.mp4"]) == "-o must end in .avi (got 'm.mp4'); cvcam records Motion-JPEG AVI.")
        #expect(
            message(Record.self, ["-o", "m.avi", "--max-size", "lots"])
                == "--max-size must be a number of bytes above 0, optionally with K, M or G (got 'lots').")
        #expect(RecordingFiles.parseBytes("50M") == 50 << 20)
        #expect(RecordingFiles.parseBytes("0") == nil)
        #expect(Snap.fileURLs(for: "/tmp/a.b.jpg", count: 2).map(\.path) == ["/tmp/a.b-1.jpg", "/tmp/a.b-2.jpg"])
    }

    @Test func watchFlagsBecomeTheTriggerConfiguration() throws {
        let watch = try SnapshotOptions.parse([
            "--dir", "d", "--min-face-size", "0.1", "--max-roll", "180", "--max-yaw", "20", "--face-cooldown", "5",
            "--cooldown", "2", "--max-per-window", "3", "--window", "30", "--every", "4", "--min-sharpness", "50",
        ])
        let c = watch.triggerConfiguration
        #expect(c.mode == .interval(seconds: 4))
        #expect(c.minimumFaceSize == 0.1 && c.maximumRollAngle == nil && c.maximumYawAngle == 20)
        #expect(c.faceCooldown == 5 && c.globalCooldown == 2 && c.maximumSnapshotsPerWindow == 3 && c.snapshotWindow == 30)
        #expect(c.minimumSharpness == 50)
    }
}
