import Foundation

/// A real stream server on loopback for the network-input tests: GStreamer's RTSP server or an
/// MJPEG-over-HTTP server (Tests/Servers/*.py, run by /usr/bin/python3 with Debian's packages,
/// which Tools/setup installs). Started on a free port (or a given one, to restart "the same
/// camera"), stopped by `stop()` or when released. With `tls`, the server speaks rtsps:// or
/// https:// with a self-signed certificate for 127.0.0.1 that /usr/bin/openssl makes at run time
/// in a temporary folder (removed when the server is released; no key is ever committed).
package final class NetworkStreamTestServer: @unchecked Sendable {
    // @unchecked: `process` is only touched by the test that owns the server.
    package enum Kind: String {
        case rtsp, mjpeg
        package var script: String { self == .rtsp ? "rtsp_server.py" : "mjpeg_http_server.py" }
        package var probe: String {
            self == .rtsp
                ? "import gi; gi.require_version('GstRtspServer', '1.0'); from gi.repository import GstRtspServer"
                : "import cv2, numpy"
        }
    }

    package struct Unavailable: Error, CustomStringConvertible {
        package var description: String
        package init(description: String) { self.description = description }
    }

    package let kind: Kind
    package let port: Int
    /// Whether the server speaks TLS (rtsps://, https://).
    package let tls: Bool
    private let process: Process
    private let output: FileHandle
    /// The temporary folder with the certificate and its key, when `tls`.
    private let certificateFolder: URL?

    /// The repository's root, which holds Tests/Servers (this file is also compiled into the App
    /// package's tests, whose own Package.swift is one level below it).
    package static let packageRoot: URL = {
        var url = URL(fileURLWithPath: #filePath)
        while url.path != "/" {
            url.deleteLastPathComponent()
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("Tests/Servers").path) { return url }
        }
        fatalError("Tests/Servers not found above \(#filePath)")
    }()

    /// Starts a server, or returns nil after printing why when its packages are missing and the
    /// tests are not running under CI (under CI a missing package throws: Tools/setup installs it).
    package static func start(
        _ kind: Kind, port: Int = 0, arguments: [String] = [], tls: Bool = false
    ) throws -> NetworkStreamTestServer? {
        if let missing = missingPackages(kind) ?? (tls && !FileManager.default.isExecutableFile(atPath: openssl) ? "\(openssl) is missing" : nil) {
            if ProcessInfo.processInfo.environment["CI"] != nil { throw Unavailable(description: missing) }
            print("skipping \(kind) server test: \(missing) (run Tools/setup)")
            return nil
        }
        let folder = tls ? try makeCertificate() : nil
        do {
            return try NetworkStreamTestServer(kind: kind, port: port, arguments: arguments, certificateFolder: folder)
        } catch {
            if let folder { try? FileManager.default.removeItem(at: folder) }
            throw error
        }
    }

    /// An MJPEG-over-HTTP server with `arguments`, and the JPEG files it cycles through (written
    /// by its `--save-frames` into a temporary folder, read back, and the folder removed), so a
    /// test can check that what reached it is byte for byte the camera's. Nil as `start` is.
    package static func startMJPEGKeepingItsFrames(_ arguments: [String]) throws -> (NetworkStreamTestServer, Set<[UInt8]>)? {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("cvcam-mjpeg-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        guard let server = try start(.mjpeg, arguments: arguments + ["--save-frames", folder.path]) else { return nil }
        let frames = Set(
            try FileManager.default.contentsOfDirectory(atPath: folder.path).map {
                [UInt8](try Data(contentsOf: folder.appendingPathComponent($0)))
            })
        return (server, frames)
    }

    package static let openssl = "/usr/bin/openssl"

    /// A fresh self-signed certificate (cert.pem) and unencrypted key (key.pem) for 127.0.0.1,
    /// valid for a day, in a new temporary folder.
    private static func makeCertificate() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("cvcam-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: openssl)
        process.arguments = [
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
            "-addext", "subjectAltName=IP:127.0.0.1",
            "-keyout", folder.appendingPathComponent("key.pem").path, "-out", folder.appendingPathComponent("cert.pem").path,
        ]
        let err = Pipe()
        process.standardOutput = FileHandle.nullDevice
        process.standardError = err
        try process.run()
        let said = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            try? FileManager.default.removeItem(at: folder)
            throw Unavailable(description: "openssl could not make a certificate: \(said)")
        }
        return folder
    }

    private static func missingPackages(_ kind: Kind) -> String? {
        let python = Process()
        python.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        python.arguments = ["-c", kind.probe]
        python.standardOutput = FileHandle.nullDevice
        python.standardError = FileHandle.nullDevice
        do { try python.run() } catch { return "/usr/bin/python3 cannot run (\(error))" }
        python.waitUntilExit()
        return python.terminationStatus == 0 ? nil : "/usr/bin/python3 cannot import what `\(kind.probe)` needs"
    }

    private init(kind: Kind, port: Int, arguments: [String], certificateFolder: URL?) throws {
        self.kind = kind
        self.tls = certificateFolder != nil
        self.certificateFolder = certificateFolder
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments =
            [Self.packageRoot.appendingPathComponent("Tests/Servers/\(kind.script)").path, "--port", String(port)]
            + (certificateFolder.map {
                ["--tls", $0.appendingPathComponent("cert.pem").path, $0.appendingPathComponent("key.pem").path]
            } ?? [])
            + arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        self.process = process
        // The script prints "ready PORT" once it listens.
        var text = ""
        let deadline = Date(timeIntervalSinceNow: 15)
        let handle = out.fileHandleForReading
        output = handle
        while !text.contains("\n") && Date() < deadline && process.isRunning {
            let chunk = handle.availableData
            if chunk.isEmpty { break }
            text += String(decoding: chunk, as: UTF8.self)
        }
        guard let line = text.split(separator: "\n").first, line.hasPrefix("ready "), let bound = Int(line.dropFirst(6))
        else {
            process.terminate()
            throw Unavailable(description: "the \(kind) server did not start (said '\(text)')")
        }
        self.port = bound
    }

    /// The PEM certificate the server presents, when `tls`.
    package var certificatePath: String? { certificateFolder?.appendingPathComponent("cert.pem").path }

    deinit {
        stop()
        if let certificateFolder { try? FileManager.default.removeItem(at: certificateFolder) }
    }

    /// The stream's URL, with credentials when given.
    package func url(user: String? = nil, password: String? = nil) -> String {
        let auth = user.map { u in password.map { "\(u):\($0)@" } ?? "\(u)@" } ?? ""
        return "\(scheme)://\(auth)127.0.0.1:\(port)/stream"
    }

    /// rtsp, rtsps, http or https.
    package var scheme: String {
        (kind == .rtsp ? "rtsp" : "http") + (tls ? "s" : "")
    }

    /// Stops the server and returns how many frames it sent in all, as the MJPEG server says
    /// when it exits ("served N"); nil when it said nothing (the RTSP server, or it was killed).
    package func stopCountingFrames() -> Int? {
        stop()
        let text = String(decoding: output.readDataToEndOfFile(), as: UTF8.self)
        guard let line = text.split(separator: "\n").last(where: { $0.hasPrefix("served ") }) else { return nil }
        return Int(line.dropFirst(7))
    }

    /// Stops the server (SIGTERM, then SIGKILL after 2 s) and waits for it to exit.
    package func stop() {
        guard process.isRunning else { return }
        process.terminate()
        let deadline = Date(timeIntervalSinceNow: 2)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}

/// A TCP port on loopback that nothing listens on (bound, then closed).
package func closedLoopbackPort() -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            _ = bind(fd, $0, length)
            _ = getsockname(fd, $0, &length)
        }
    }
    return Int(UInt16(bigEndian: address.sin_port))
}
