import Foundation
import Synchronization
import Testing
import AppTestSupport

/// Several viewers at once, and viewers coming and going, against one `cvcam preview` (the
/// 5-minute memory run is `Tools/bench-preview --soak`, not part of the suite).
extension PreviewEndToEnd {
@Suite(.serialized) struct PreviewLoadTests {
    /// A preview server process whose pid the test can look at in /proc.
    final class Server: Sendable {
        let process: Process
        let port: Int

        init(_ arguments: [String]) throws {
            let (process, out, _) = CLI.process(["preview", "--listen", "127.0.0.1:0", "-q"] + arguments)
            self.process = process
            try process.run()
            let found = Mutex<Int?>(nil)
            Thread {
                var text = ""
                while case let chunk = out.fileHandleForReading.availableData, !chunk.isEmpty {
                    text += String(decoding: chunk, as: UTF8.self)
                    if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("preview: ") }),
                        let port = URL(string: String(line.dropFirst("preview: ".count)))?.port
                    {
                        found.withLock { $0 = port }
                    }
                }
            }.start()
            let deadline = Date(timeIntervalSinceNow: 60)
            while found.withLock({ $0 }) == nil, Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
            guard let port = found.withLock({ $0 }) else {
                process.terminate()
                throw PreviewBrowserRun.Failure(description: "preview did not start")
            }
            self.port = port
        }

        deinit { if process.isRunning { process.terminate() } }

        var openFiles: Int { (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(process.processIdentifier)/fd").count) ?? -1 }
        var threads: Int {
            let status = (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)) ?? ""
            return status.split(separator: "\n").first { $0.hasPrefix("Threads:") }.flatMap { Int($0.split(separator: "\t").last ?? "") } ?? -1
        }

        func stats() throws -> [String: Any] {
            let answer = try PreviewServerTests.get("/cameras/camera/stats.json", port: port)
            return try #require(try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any])
        }
    }

    /// Reads the MJPEG stream at `path` for `seconds` (or until `frames` parts arrived, or the
    /// server ends it) and counts parts.
    static func watch(port: Int, seconds: Double, frames: Int = .max, path: String = "/cameras/camera/stream.mjpeg") -> Int {
        guard let fd = try? LoopbackSocket.connect(port: port, receiveTimeout: 1) else { return -1 }
        defer { close(fd) }
        let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n".utf8)
        _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
        let marker = Array("--cvcamframe\r\n".utf8)
        var count = 0
        var tail: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        let deadline = Date(timeIntervalSinceNow: seconds)
        while Date() < deadline, count < frames {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 { continue }
            if n == 0 { break }
            // Count markers in the new bytes, with the previous chunk's tail in case one straddles.
            let window = tail + buffer[0..<n]
            var i = 0
            while i + marker.count <= window.count {
                if window[i] == marker[0], Array(window[i..<(i + marker.count)]) == marker {
                    count += 1
                    i += marker.count
                } else {
                    i += 1
                }
            }
            tail = Array(window.suffix(marker.count - 1))
        }
        return count
    }

    /// Four viewers at once each get the stream from one shared encode. Whether watching costs
    /// detection frames depends on the machine's speed, so it is measured by
    /// `Tools/bench-preview` (skipped frames with and without viewers, in one run), not here.
    @Test func severalViewersGetFramesFromOneEncode() throws {
        let faces = CLI.packageRoot.appendingPathComponent("Tests/Fixtures/faces/images").path
        let server = try Server([
            "--input", "synthetic:size=320x240,fps=15,background=\(faces)/astronaut.png", "--stream-fps", "15",
        ])
        let counts = Mutex<[Int]>([])
        let group = DispatchGroup()
        for _ in 0..<4 {
            DispatchQueue.global().async(group: group) {
                let n = Self.watch(port: server.port, seconds: 3)
                counts.withLock { $0.append(n) }
            }
        }
        group.wait()
        let got = counts.withLock { $0 }
        #expect(got.count == 4)
        // 3 s at 15 fps is 45; a busy box loses some to scheduling, a broken fan-out all of them.
        for n in got { #expect(n >= 10, "a viewer got \(n) frames in 3 s: \(got)") }
        // One encode per captured frame at most, however many watch.
        let stats = try server.stats()
        let captured = try #require(stats["capturedFrames"] as? Int)
        let encoded = try #require(stats["encodedFrames"] as? Int)
        #expect(encoded > 0 && encoded <= captured, "\(encoded) encodes for \(captured) frames")
    }

    /// Viewers that connect, take a frame and leave, 40 times: afterwards the server has no
    /// viewer left, and no more open files or threads than before.
    @Test func viewersComingAndGoingLeaveNothingBehind() throws {
        let server = try Server(["--input", "synthetic:size=320x240,fps=30,background=gray", "--stream-fps", "30"])
        // One visit first, so lazily made pools and threads exist before the baseline.
        _ = Self.watch(port: server.port, seconds: 2, frames: 2)
        Thread.sleep(forTimeInterval: 0.5)
        let files0 = server.openFiles, threads0 = server.threads
        for _ in 0..<40 {
            #expect(Self.watch(port: server.port, seconds: 2, frames: 1) >= 1)
        }
        Thread.sleep(forTimeInterval: 1)
        #expect(try server.stats()["viewers"] as? Int == 0)
        #expect(server.openFiles <= files0 + 2, "open files \(files0) → \(server.openFiles)")
        #expect(server.threads <= threads0 + 2, "threads \(threads0) → \(server.threads)")
    }
}
}
