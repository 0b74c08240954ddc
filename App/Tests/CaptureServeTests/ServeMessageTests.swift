import Foundation
import Synchronization
import Testing

@testable import CaptureJobs
@testable import CaptureServe
import AppTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// Messages in cvcam's own words, naming the file, address or key (issue #30, item 16):
/// Foundation's "NSCocoaErrorDomain error 512" or a Mac's guess ("You don't have permission")
/// never reach a user; errno's text does.
@Suite(.serialized) struct ServeMessageTests {
    static func folder() throws -> URL { try ServeProcess.folder() }

    /// Words that mean Foundation spoke instead of us.
    static func soundsLikeFoundation(_ text: String) -> Bool {
        ["NSCocoaErrorDomain", "The operation could not be completed", "don't have permission", "Error Domain="].contains {
            text.contains($0)
        }
    }

    // MARK: The one function

    @Test func foundationErrorsBecomeErrnosText() throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("a-file")
        try Data("x".utf8).write(to: file)
        // A folder inside a file: Foundation says "error 512" on Linux, with no errno; the folder
        // is made with mkdir(2) instead, which says what is in the way.
        let inside = file.appendingPathComponent("sub").appendingPathComponent("deeper")
        let foundation = #expect(throws: (any Error).self) {
            try FileManager.default.createDirectory(at: inside, withIntermediateDirectories: true)
        }
        #expect(!Self.soundsLikeFoundation(SystemErrorText.reason(for: try #require(foundation))))
        let made = #expect(throws: CLIError.self) { try LocalFiles.makeFolder(inside.path, what: "the snapshot folder") }
        #expect(made?.description == "cannot create the snapshot folder \(inside.path): \(file.path) is a file, not a folder")
        let fileItself = #expect(throws: CLIError.self) { try LocalFiles.makeFolder(file.path, what: "the recording folder") }
        #expect(fileItself?.description == "cannot create the recording folder \(file.path): it exists and is a file")
        let fresh = dir.appendingPathComponent("a/b/c").path
        #expect(throws: Never.self) { try LocalFiles.makeFolder(fresh, what: "the snapshot folder") }
        var info = stat()
        #expect(stat(fresh, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR)
        // Reading a folder as a file.
        let read = #expect(throws: (any Error).self) { _ = try String(contentsOfFile: dir.path, encoding: .utf8) }
        let readMessage = SystemErrorText.reason(for: try #require(read))
        #expect(!Self.soundsLikeFoundation(readMessage), "\(readMessage)")
        // The codes Foundation gives without an errno (256, 512), and one with it underneath.
        for code in [CocoaError.Code.fileReadUnknown, .fileWriteUnknown] {
            let reason = SystemErrorText.reason(for: CocoaError(code))
            #expect(!Self.soundsLikeFoundation(reason) && !reason.contains("error \(code.rawValue).)"), "\(reason)")
        }
        let underlying = NSError(domain: NSPOSIXErrorDomain, code: Int(ENOSPC))
        #expect(SystemErrorText.reason(for: CocoaError(.fileWriteUnknown, userInfo: [NSUnderlyingErrorKey: underlying]))
            == String(cString: strerror(ENOSPC)))
        #expect(SystemErrorText.reason(for: POSIXError(.EROFS)) == String(cString: strerror(EROFS)))
        #expect(SystemErrorText.reason(for: CocoaError(.fileReadNoPermission)) == String(cString: strerror(EACCES)))
        // cvcam's own errors say what they say.
        #expect(SystemErrorText.reason(for: CLIError.message("camera door: gone")) == "camera door: gone")
    }

    // MARK: The configuration file

    /// The problem `ServeConfig.load` reports for `path`, loaded on a thread of its own so a
    /// file that blocks cannot hang the test (nil: it did not return within 20 s).
    static func loadProblem(_ path: String) -> String? {
        let result = Mutex<String?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread {
            do throws(ServeConfigError) {
                _ = try ServeConfig.load(path: path)
                result.withLock { $0 = "loaded" }
            } catch {
                result.withLock { $0 = error.description }
            }
            done.signal()
        }.start()
        guard done.wait(timeout: .now() + 20) == .success else { return nil }
        return result.withLock { $0 }
    }

    @Test func aConfigurationThatIsNotARegularFileIsNamedForWhatItIs() throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let fifo = dir.appendingPathComponent("serve.yaml").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let fifoProblem = Self.loadProblem(fifo)
        if fifoProblem == nil {
            // Unblock the reader left behind, so the thread ends.
            let fd = open(fifo, O_RDWR)
            if fd >= 0 { close(fd) }
        }
        let cases: [(path: String, problem: String?, says: String)] = [
            (fifo, fifoProblem, "is a FIFO (named pipe), not a regular file"),
            ("/dev/zero", Self.loadProblem("/dev/zero"), "is a character device, not a regular file"),
            (dir.path, Self.loadProblem(dir.path), "is a folder, not a regular file"),
            (dir.path + "/missing.yaml", Self.loadProblem(dir.path + "/missing.yaml"), "does not exist"),
        ]
        for c in cases {
            let problem = try #require(c.problem, "\(c.path): loading did not return")
            #expect(problem.hasPrefix(c.path + ": 1 problem"), "\(problem)")
            #expect(problem.contains(c.says), "\(problem)")
            #expect(!Self.soundsLikeFoundation(problem), "\(problem)")
        }
        // Not UTF-8.
        let latin1 = dir.appendingPathComponent("latin1.yaml")
        try Data([0x6D, 0x71, 0x74, 0x74, 0x3A, 0x20, 0xE9, 0xFF, 0x0A]).write(to: latin1)
        let notText = try #require(Self.loadProblem(latin1.path))
        #expect(notText.contains("not UTF-8") && !Self.soundsLikeFoundation(notText), "\(notText)")
    }

    /// A YAML error names its line and column in our words, without quoting the file (the line
    /// could hold a secret).
    @Test func aYAMLErrorNamesItsLineWithoutQuotingTheFile() {
        let error = #expect(throws: ServeConfigError.self) {
            try ServeConfig.parse("mqtt:\n  broker: mqtt://h\n  username: [secret-in-here\n", file: "serve.yaml")
        }
        let problem = error?.problems.first
        #expect(problem?.line != nil)
        #expect(problem?.message.hasPrefix("not valid YAML: ") == true, "\(String(describing: problem))")
        #expect(problem?.message.contains("secret-in-here") == false, "\(String(describing: problem))")
        #expect(problem?.message.contains("\n") == false)
    }

    @Test func theCLISaysWhatTheConfigurationFileIs() throws {
        let result = try CLI.run(["serve", "--config", "/dev/zero", "--check"])
        #expect(result.status == 64)
        #expect(result.stderr.contains("/dev/zero: 1 problem") && result.stderr.contains("character device"), "\(result.stderr)")
        #expect(!Self.soundsLikeFoundation(result.stderr), "\(result.stderr)")
    }

    // MARK: Addresses and reloads

    /// Waits up to 60 s until process `pid` catches or ignores `signal` (`/proc/PID/status`).
    static func waitUntilHandling(_ signal: Int32, pid: Int32) -> Bool {
        let bit = UInt64(1) << UInt64(signal - 1)
        let end = Date(timeIntervalSinceNow: 60)
        while Date() < end {
            let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
            for line in status.split(separator: "\n") where line.hasPrefix("SigCgt:") || line.hasPrefix("SigIgn:") {
                let hex = line.split(separator: "\t").last.map(String.init) ?? ""
                if let mask = UInt64(hex.trimmingCharacters(in: .whitespaces), radix: 16), mask & bit != 0 { return true }
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return false
    }

    /// A metrics address already taken: the run fails, naming the address, errno's text and
    /// the key to change.
    @Test func aMetricsPortInUseNamesTheAddress() throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        // Hold a port: a listening socket on loopback.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #expect(fd >= 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        #expect(bound == 0 && listen(fd, 1) == 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        let port = Int(UInt16(bigEndian: address.sin_port))
        let config = dir.appendingPathComponent("serve.yaml")
        try """
            mqtt: {broker: "mqtt://127.0.0.1:1"}
            metrics: {listen: "127.0.0.1:\(port)"}
            cameras: [{name: a, input: "synthetic:size=64x48,fps=5", codes: [qr]}]
            """.write(to: config, atomically: true, encoding: .utf8)
        let daemon = try ServeProcess(config: config.path)
        let status = daemon.waitForExit(60)
        #expect(status == 1, "\(daemon.stderr)")
        #expect(daemon.stderr.contains("cannot serve the metrics on 127.0.0.1:\(port): \(String(cString: strerror(EADDRINUSE)))"), "\(daemon.stderr)")
        #expect(daemon.stderr.contains("metrics.listen"), "\(daemon.stderr)")
    }

    /// A reload refused: each problem on a line of its own in the log, never one line with
    /// literal `\n`s.
    @Test func aRefusedReloadLogsEachProblemOnItsOwnLine() throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let config = dir.appendingPathComponent("serve.yaml")
        try """
            mqtt: {broker: "mqtt://127.0.0.1:1"}
            cameras: [{name: a, input: "synthetic:size=64x48,fps=5", codes: [qr]}]
            """.write(to: config, atomically: true, encoding: .utf8)
        let daemon = try ServeProcess(config: config.path)
        defer {
            daemon.signal(SIGTERM)
            _ = daemon.waitForExit(30)
        }
        // SIGHUP kills a process that does not handle it yet: wait until the daemon does.
        #expect(Self.waitUntilHandling(SIGHUP, pid: daemon.process.processIdentifier), "\(daemon.stderr)")
        try """
            mqtt: {broker: "mqtt://127.0.0.1:1"}
            stats: -3
            cameras: [{name: a, input: "synthetic:size=64x48,fps=5", codes: [qr], faces: 7}]
            """.write(to: config, atomically: true, encoding: .utf8)
        daemon.signal(SIGHUP)
        let refused = Date(timeIntervalSinceNow: 30)
        while daemon.stderr.components(separatedBy: "reload refused").count < 4 && Date() < refused {
            Thread.sleep(forTimeInterval: 0.1)
        }
        let lines = daemon.stderr.split(separator: "\n").filter { $0.contains("reload refused") }
        #expect(lines.count >= 3, "\(daemon.stderr)")
        #expect(lines.first?.contains("2 problems; the running configuration stays") == true, "\(lines)")
        #expect(lines.contains { $0.contains("line 2: stats") }, "\(lines)")
        #expect(!daemon.stderr.contains("\\n"), "\(daemon.stderr)")
    }
}
