import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Sends arbitrary bytes to a loopback HTTP server and records what comes back, for the tests of
/// what the servers do with hostile clients (issue #30): oversized heads, unknown methods, TLS on
/// the plain port, slow and idle clients, many connections.
///
/// The bytes go out on a thread of their own while this one reads, so an answer that comes
/// before the server has read everything (a 414 after the first 8 KiB of a 100 kB URL) is seen
/// before the connection is torn down. Reads wait up to `timeout` seconds: generous bounds on a
/// condition, never a measure of speed.
package enum RawHTTPProbe {
    package struct Outcome: CustomStringConvertible {
        /// Everything the server sent.
        package var bytes: [UInt8]
        /// Whether the server closed (or reset) the connection before the timeout.
        package var closed: Bool

        package var text: String { String(decoding: bytes, as: UTF8.self) }
        /// The status of the first answer, when there is one.
        package var status: Int? {
            guard text.hasPrefix("HTTP/1."), let line = text.split(separator: "\r\n").first else { return nil }
            let parts = line.split(separator: " ")
            return parts.count >= 2 ? Int(parts[1]) : nil
        }
        /// Every status line's status, in order (pipelined requests).
        package var statuses: [Int] {
            // An answer's status line follows the previous body directly, not always after a line break.
            text.matches(of: #/HTTP/1\.[01] (\d{3}) /#).compactMap { Int($0.1) }
        }
        package var description: String { "closed: \(closed), \(bytes.count) bytes: \(text.prefix(300))" }
    }

    /// Connects to 127.0.0.1:`port`, sends `chunks` one after another (`pause` seconds apart),
    /// and reads until the server closes or `timeout` seconds pass without an answer ending.
    /// With `stopAfterAnswer`, reading stops at the end of the first whole answer head and body
    /// (for servers that keep the connection).
    package static func exchange(
        port: Int, _ chunks: [[UInt8]], pause: Double = 0, timeout: Int = 30, stopAfterAnswer: Bool = false
    ) throws -> Outcome {
        let fd = try LoopbackSocket.connect(port: port, receiveTimeout: timeout)
        let sent = DispatchSemaphore(value: 0)
        // The sender is joined before the descriptor is closed: its number could be reused.
        defer {
            shutdown(fd, Int32(SHUT_RDWR))
            sent.wait()
            close(fd)
        }
        let sending = Thread {
            defer { sent.signal() }
            for (i, chunk) in chunks.enumerated() {
                if i > 0 && pause > 0 { Thread.sleep(forTimeInterval: pause) }
                var offset = 0
                while offset < chunk.count {
                    let n = chunk[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                    if n <= 0 { return }  // the server closed: the answer, if any, is already read
                    offset += n
                }
            }
        }
        sending.start()
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        var closed = false
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 || (n < 0 && errno == ECONNRESET) {
                closed = true
                break
            }
            if n < 0 { break }  // the timeout
            received += buffer[0..<n]
            if stopAfterAnswer, answerIsWhole(received) { break }
        }
        return Outcome(bytes: received, closed: closed)
    }

    /// `exchange` with one request given as text.
    package static func exchange(port: Int, _ request: String, timeout: Int = 30, stopAfterAnswer: Bool = false) throws -> Outcome {
        try exchange(port: port, [Array(request.utf8)], timeout: timeout, stopAfterAnswer: stopAfterAnswer)
    }

    /// A GET of `path` naming `host` (with `Connection: close`): the answer, and with
    /// `untilClosed` whether the server then closed (else reading stops at the answer's end).
    package static func get(port: Int, _ path: String, host: String?, extra: [String] = [], untilClosed: Bool = false) throws -> Outcome {
        let lines = ["GET \(path) HTTP/1.1"] + (host.map { ["Host: \($0)"] } ?? []) + extra + ["Connection: close", "", ""]
        return try exchange(port: port, lines.joined(separator: "\r\n"), stopAfterAnswer: !untilClosed)
    }

    /// A WebSocket upgrade request for `path` naming `host`: the answer's head (and, after a
    /// 101, whatever the server sends within `seconds`).
    package static func upgrade(port: Int, _ path: String, host: String, seconds: Int = 3) throws -> Outcome {
        let request = [
            "GET \(path) HTTP/1.1", "Host: \(host)", "Upgrade: websocket", "Connection: Upgrade",
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13", "", "",
        ].joined(separator: "\r\n")
        return try exchange(port: port, request, timeout: seconds)
    }

    /// Whether `bytes` hold a whole answer: a head and, by its Content-Length, its body.
    static func answerIsWhole(_ bytes: [UInt8]) -> Bool {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let split = text.range(of: "\r\n\r\n") else { return false }
        let head = text[..<split.lowerBound].lowercased()
        guard let line = head.split(separator: "\r\n").first(where: { $0.hasPrefix("content-length:") }),
            let length = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces))
        else { return false }
        return text[split.upperBound...].utf8.count >= length
    }

    /// Opens `count` connections that send nothing (the caller closes them).
    package static func hold(port: Int, count: Int) throws -> [Int32] {
        try (0..<count).map { _ in try LoopbackSocket.connect(port: port, receiveTimeout: 30) }
    }

    /// Whether the server has closed `fd` (reads 0 or a reset) within `seconds`, consuming
    /// anything it sent first (which is returned).
    package static func waitForClose(_ fd: Int32, seconds: Int) -> (closed: Bool, received: String) {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 || (n < 0 && errno == ECONNRESET) { return (true, String(decoding: received, as: UTF8.self)) }
            if n < 0 { return (false, String(decoding: received, as: UTF8.self)) }
            received += buffer[0..<n]
        }
    }

    /// A TLS 1.2 ClientHello's first bytes, as a browser sends to an https:// URL.
    package static let tlsClientHello: [UInt8] = [
        0x16, 0x03, 0x01, 0x00, 0x2F, 0x01, 0x00, 0x00, 0x2B, 0x03, 0x03,
    ] + [UInt8](repeating: 0x11, count: 32) + [0x00, 0x00, 0x02, 0x00, 0x2F, 0x01, 0x00]
}
