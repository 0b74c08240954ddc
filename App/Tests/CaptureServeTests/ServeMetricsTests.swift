import Foundation
import Testing

@testable import CaptureJobs
@testable import CapturePreview
@testable import CaptureServe
import AppTestSupport

/// `cvcam serve`'s Prometheus figures and the `/metrics` endpoint that serves them.
@Suite struct ServeMetricsTests {
    /// The value of the sample line that starts with `series` (name and labels), or nil.
    static func sample(_ text: String, _ series: String) -> Double? {
        for line in text.split(separator: "\n") where line.hasPrefix(series + " ") {
            return Double(line.dropFirst(series.count + 1))
        }
        return nil
    }

    @Test func countersGrowByTheDeltasOfRunningTotals() {
        let metrics = ServeMetrics()
        let door = metrics.camera("door")
        door.update(frames: 10, analysed: 8, skipped: 2)
        door.update(frames: 25, analysed: 20, skipped: 5)
        door.update(frames: 25, analysed: 20, skipped: 5)  // no growth, no change
        let text = metrics.render()
        #expect(Self.sample(text, #"cvcam_frames_captured_total{camera="door"}"#) == 25)
        #expect(Self.sample(text, #"cvcam_frames_analysed_total{camera="door"}"#) == 20)
        #expect(Self.sample(text, #"cvcam_frames_skipped_total{camera="door"}"#) == 5)
        #expect(text.contains("# TYPE cvcam_frames_captured_total counter"))
    }

    @Test func countersSurviveARestartOfTheTotals() {
        let metrics = ServeMetrics()
        let gate = metrics.camera("gate")
        gate.update(frames: 100, analysed: 90, skipped: 10)
        // The session restarted: its totals count from 0 again, and all of it is new.
        gate.update(frames: 30, analysed: 25, skipped: 5)
        var text = metrics.render()
        #expect(Self.sample(text, #"cvcam_frames_captured_total{camera="gate"}"#) == 130)
        #expect(Self.sample(text, #"cvcam_frames_analysed_total{camera="gate"}"#) == 115)
        #expect(Self.sample(text, #"cvcam_frames_skipped_total{camera="gate"}"#) == 15)
        // A restart the daemon announces: the first totals after it are growth even when they
        // already exceed the old ones.
        gate.sessionRestarted()
        gate.update(frames: 40, analysed: 30, skipped: 10)
        text = metrics.render()
        #expect(Self.sample(text, #"cvcam_frames_captured_total{camera="gate"}"#) == 170)
        #expect(Self.sample(text, #"cvcam_frames_analysed_total{camera="gate"}"#) == 145)
        #expect(Self.sample(text, #"cvcam_frames_skipped_total{camera="gate"}"#) == 25)
        // A camera made again under the same name keeps its counters and baseline.
        #expect(metrics.camera("gate") === gate)
        #expect(gate.totalsSeen == .init(frames: 40, analysed: 30, skipped: 10))
    }

    @Test func camerasAndRegistriesAreIndependent() {
        let first = ServeMetrics()
        let second = ServeMetrics()
        first.camera("a").update(frames: 5, analysed: 5, skipped: 0)
        first.camera("b").update(frames: 7, analysed: 1, skipped: 6)
        let text = first.render()
        #expect(Self.sample(text, #"cvcam_frames_captured_total{camera="a"}"#) == 5)
        #expect(Self.sample(text, #"cvcam_frames_captured_total{camera="b"}"#) == 7)
        #expect(!second.render().contains("cvcam_frames_captured_total{"))
    }

    @Test func detectionLatencyFillsCumulativeBucketsInSeconds() {
        let metrics = ServeMetrics()
        let door = metrics.camera("door")
        for ms in [1, 4, 7, 30, 30, 600, 3000] { door.recordDetectionLatency(.milliseconds(ms), stage: .faces) }
        door.recordDetectionLatency(.milliseconds(2), stage: .codes)
        let text = metrics.render()
        #expect(text.contains("# TYPE cvcam_detection_latency_seconds histogram"))
        let expected: [(String, Double)] = [
            ("0.005", 2), ("0.01", 3), ("0.025", 3), ("0.05", 5), ("0.1", 5), ("0.25", 5), ("0.5", 5), ("1.0", 6),
            ("2.0", 6), ("+Inf", 7),
        ]
        for (bound, count) in expected {
            let series = #"cvcam_detection_latency_seconds_bucket{camera="door",stage="faces",le=""# + bound + #""}"#
            #expect(Self.sample(text, series) == count, "\(series)")
        }
        #expect(Self.sample(text, #"cvcam_detection_latency_seconds_count{camera="door",stage="faces"}"#) == 7)
        // Each stage is its own series: the codes stage's one observation is not among the faces'.
        #expect(Self.sample(text, #"cvcam_detection_latency_seconds_count{camera="door",stage="codes"}"#) == 1)
        let sum = Self.sample(text, #"cvcam_detection_latency_seconds_sum{camera="door",stage="faces"}"#)
        #expect(sum.map { abs($0 - 3.672) < 1e-9 } == true, "sum \(String(describing: sum))")
        #expect(ServeMetrics.detectionLatencyBuckets.first == .milliseconds(5))
        #expect(ServeMetrics.detectionLatencyBuckets.last == .seconds(2))
    }

    @Test func reconnectsOnlineAndMQTTFigures() {
        let metrics = ServeMetrics()
        let door = metrics.camera("door")
        door.setOnline(true)
        door.recordReconnect()
        door.recordReconnect()
        for _ in 0..<5 { door.recordReconnectAttempt() }
        metrics.mqtt.setQueue(depth: 12, spooled: 3)
        metrics.mqtt.recordDropped(4)
        metrics.mqtt.recordDropped(0)
        metrics.mqtt.recordReconnect()
        metrics.mqtt.setConnected(true)
        var text = metrics.render()
        #expect(Self.sample(text, #"cvcam_camera_online{camera="door"}"#) == 1)
        #expect(Self.sample(text, #"cvcam_input_reconnects_total{camera="door"}"#) == 2)
        #expect(Self.sample(text, #"cvcam_input_reconnect_attempts_total{camera="door"}"#) == 5)
        #expect(Self.sample(text, "cvcam_mqtt_queue_depth") == 12)
        #expect(Self.sample(text, "cvcam_mqtt_spooled_messages") == 3)
        #expect(Self.sample(text, "cvcam_mqtt_dropped_messages_total") == 4)
        #expect(Self.sample(text, "cvcam_mqtt_reconnects_total") == 1)
        #expect(Self.sample(text, "cvcam_mqtt_connected") == 1)
        door.setOnline(false)
        metrics.mqtt.setConnected(false)
        text = metrics.render()
        #expect(Self.sample(text, #"cvcam_camera_online{camera="door"}"#) == 0)
        #expect(Self.sample(text, "cvcam_mqtt_connected") == 0)
    }

    /// A removed camera's series leave the output (an alert on `cvcam_camera_online == 0` must
    /// not fire for a camera that no longer exists); the others stay; the name can come back.
    @Test func aRemovedCameraTakesItsSeriesWithIt() {
        let metrics = ServeMetrics()
        for name in ["gone", "kept"] {
            let camera = metrics.camera(name)
            camera.update(frames: 5, analysed: 5, skipped: 0)
            camera.setOnline(false)
            camera.recordReconnect()
            camera.recordReconnectAttempt()
            camera.recordDetectionLatency(.milliseconds(4), stage: .faces)
            camera.recordDetectionLatency(.milliseconds(4), stage: .codes)
        }
        let gone = metrics.camera("gone")
        metrics.removeCamera("gone")
        // A late observation from the stopping camera does not bring a series back.
        gone.recordDetectionLatency(.milliseconds(4), stage: .faces)
        var text = metrics.render()
        #expect(!text.contains(#"camera="gone""#), "\(text)")
        #expect(Self.sample(text, #"cvcam_camera_online{camera="kept"}"#) == 0)
        #expect(Self.sample(text, #"cvcam_detection_latency_seconds_count{camera="kept",stage="codes"}"#) == 1)
        metrics.camera("gone").update(frames: 2, analysed: 2, skipped: 0)
        text = metrics.render()
        #expect(Self.sample(text, #"cvcam_frames_captured_total{camera="gone"}"#) == 2)
    }

    @Test func labelValuesWithQuotesBackslashesAndNewlinesAreEscaped() {
        let metrics = ServeMetrics()
        metrics.camera("a\"b\\c\nd} 99").update(frames: 3, analysed: 3, skipped: 0)
        let text = metrics.render()
        #expect(Self.sample(text, #"cvcam_frames_captured_total{camera="a\"b\\c\nd} 99"}"#) == 3)
        // Every line is a comment or `series value`: the newline did not split a sample.
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).dropLast() {
            #expect(line.hasPrefix("# ") || line.hasPrefix("cvcam_"), "\(line)")
        }
    }

    @Test func updatesFromManyThreadsAddUp() async {
        let metrics = ServeMetrics()
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    let camera = metrics.camera("cam\(task % 2)")
                    for _ in 0..<100 {
                        camera.recordDetectionLatency(.milliseconds(3), stage: .codes)
                        metrics.mqtt.recordDropped()
                    }
                }
            }
        }
        let text = metrics.render()
        #expect(Self.sample(text, #"cvcam_detection_latency_seconds_count{camera="cam0",stage="codes"}"#) == 400)
        #expect(Self.sample(text, #"cvcam_detection_latency_seconds_count{camera="cam1",stage="codes"}"#) == 400)
        #expect(Self.sample(text, "cvcam_mqtt_dropped_messages_total") == 800)
    }

    // MARK: Address

    @Test func addressesParseAndMalformedOnesAreRejected() throws {
        #expect(try MetricsServer.Address(parsing: "9464") == .init(host: "127.0.0.1", port: 9464))
        #expect(try MetricsServer.Address(parsing: "0.0.0.0:80") == .init(host: "0.0.0.0", port: 80))
        #expect(try MetricsServer.Address(parsing: "localhost:0") == .init(host: "localhost", port: 0))
        #expect(try MetricsServer.Address(parsing: "[::1]:9464") == .init(host: "::1", port: 9464))
        #expect(try MetricsServer.Address(parsing: "[::1]:9464").description == "[::1]:9464")
        for bad in [
            "", ":", "host:", ":80", "127.0.0.1:65536", "127.0.0.1:-1", "127.0.0.1:80x", "999.0.0.1:80", "::1:80",
            "[::1]", "[::1:80", "[nothost]:80", "bad host:80", "-a:80", "a..b:80", "127.0.0.1:+80",
            "127.0.0.1:000000080", "\u{130}stanbul:80", "caf\u{E9}:80", "a_b:80",
        ] {
            #expect(throws: CLIError.self, "\(bad)") { try MetricsServer.Address(parsing: bad) }
        }
        let error = try #require(throws: CLIError.self) { try MetricsServer.Address(parsing: "localhost:http") }
        #expect(error.description.contains("'localhost:http'") && error.description.contains("0 to 65535"))
    }

    // MARK: Server

    /// Starts the server on a kernel-chosen loopback port, hands `body` the port, then cancels
    /// the server's task, as a ServiceGroup does to its services, and waits for it to end.
    static func withServer(_ metrics: ServeMetrics, _ body: (Int) async throws -> Void) async throws {
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let server = try MetricsServer(address: "127.0.0.1:0", metrics: metrics) { port in
            continuation.yield(port)
            continuation.finish()
        }
        let running = Task(executorPreference: OwnQueueExecutor()) { try await server.run() }
        defer { running.cancel() }
        var iterator = ports.makeAsyncIterator()
        let port = try #require(await iterator.next())
        #expect(port > 0)
        try await body(port)
        running.cancel()
        // Cancellation is a normal end for a service: it returns or throws CancellationError.
        do {
            try await running.value
        } catch is CancellationError {}
    }

    @Test(.timeLimit(.minutes(10))) func theServerAnswersMetricsAnd404ElsewhereOnLoopback() async throws {
        let metrics = ServeMetrics()
        metrics.camera("door").update(frames: 42, analysed: 40, skipped: 2)
        try await Self.withServer(metrics) { port in
            let ok = try await RawHTTP.get("/metrics", port: port)
            #expect(ok.status == 200)
            #expect(ok.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8")
            #expect(Self.sample(ok.body, #"cvcam_frames_captured_total{camera="door"}"#) == 42)
            #expect(ok.body == metrics.render())
            // Later figures show on the next scrape.
            metrics.camera("door").update(frames: 50, analysed: 48, skipped: 2)
            let again = try await RawHTTP.get("/metrics", port: port)
            #expect(Self.sample(again.body, #"cvcam_frames_captured_total{camera="door"}"#) == 50)
            for path in ["/", "/metrics/x", "/other", "/metricsx"] {
                #expect(try await RawHTTP.get(path, port: port).status == 404, "\(path)")
            }
        }
    }

    @Test(.timeLimit(.minutes(10))) func anAddressInUseFailsTheRun() async throws {
        try await Self.withServer(ServeMetrics()) { port in
            // reuseAddress does not allow two listeners on one port (that would need SO_REUSEPORT).
            let second = try MetricsServer(address: "127.0.0.1:\(port)", metrics: ServeMetrics())
            await #expect(throws: (any Error).self) { try await second.run() }
        }
    }
}

/// Runs a task's jobs on a queue of its own. The server's request handlers are async tasks;
/// on the cooperative pool (as wide as the cores) they could wait behind tests of other suites
/// that block its threads, and the scrape would time out.
final class OwnQueueExecutor: TaskExecutor {
    private let queue = DispatchQueue(label: "cvcam.metrics-test.executor")

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}

/// A blocking HTTP/1.1 GET over a plain loopback socket, so the test needs no HTTP client.
enum RawHTTP {
    struct Reply {
        var status: Int
        /// Header names lowercased.
        var headers: [String: String]
        var body: String
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// GETs `path` on a thread of its own: blocking a thread of Swift's cooperative pool (as
    /// wide as the cores) could starve the server, whose handlers run on that pool too.
    static func get(_ path: String, port: Int) async throws -> Reply {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try blockingGet(path, port: port) }) }.start()
        }
    }

    static func blockingGet(_ path: String, port: Int) throws -> Reply {
        let fd = try LoopbackSocket.connect(port: port, receiveTimeout: 30)
        defer { close(fd) }
        let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n".utf8)
        guard send(fd, request, request.count, Int32(MSG_NOSIGNAL)) == request.count else {
            throw Failure(description: "send: errno \(errno)")
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = recv(fd, &chunk, chunk.count, 0)
            if count == 0 { break }
            guard count > 0 else { throw Failure(description: "recv: errno \(errno)") }
            bytes += chunk[..<count]
        }
        let text = String(decoding: bytes, as: UTF8.self)
        guard let split = text.range(of: "\r\n\r\n") else { throw Failure(description: "no header end in \(text)") }
        let head = text[..<split.lowerBound].components(separatedBy: "\r\n")
        let statusParts = head[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else {
            throw Failure(description: "bad status line \(head[0])")
        }
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        var body = String(text[split.upperBound...])
        if let length = headers["content-length"].flatMap(Int.init) {
            // Thrown, not #expect-ed: this runs on a thread of its own, outside the test's task.
            guard body.utf8.count == length else {
                throw Failure(description: "body of \(body.utf8.count) bytes, Content-Length \(length)")
            }
        } else if headers["transfer-encoding"] == "chunked" {
            body = dechunk(body)
        }
        return Reply(status: status, headers: headers, body: body)
    }

    /// Joins a chunked body's chunks (`<hex size>\r\n<data>\r\n`…`0\r\n\r\n`).
    private static func dechunk(_ text: String) -> String {
        var rest = Substring(text)
        var out = ""
        while let lineEnd = rest.range(of: "\r\n"), let size = Int(rest[..<lineEnd.lowerBound], radix: 16), size > 0 {
            let start = lineEnd.upperBound
            let data = rest.utf8[start...].prefix(size)
            out += String(decoding: data, as: UTF8.self)
            rest = Substring(rest.utf8[data.endIndex...].dropFirst(2))
        }
        return out
    }
}
