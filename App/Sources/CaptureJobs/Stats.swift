import CaptureKit
import Foundation

/// `--stats-interval`: every interval, a `stats` event (NDJSON) or `stats:` line (stderr) with
/// frames, rate, skipped frames, detection time per frame, CPU and resident memory — what the
/// terminal status line shows, for a pipe or a service log, where there is no status line.
///
/// Threading: `start` and `stop` on one thread; the report runs on its own timer queue.
package final class StatsReporter: @unchecked Sendable {
    // @unchecked: `last` is touched only on `queue` (by the timer, and by `stop` through a sync).

    /// Counts so far: frames captured, analysed, and skipped (by analysis or the output).
    package struct Counts: Sendable {
        package var frames: Int
        package var analysed: Int
        package var skipped: Int

        /// Creates the value from each of its properties.
        package init(frames: Int, analysed: Int, skipped: Int) {
            self.frames = frames
            self.analysed = analysed
            self.skipped = skipped
        }
    }

    package let interval: Double
    package let printer: EventPrinter
    package let counts: @Sendable () -> Counts
    package let latency: LatencyRecorder?
    private let queue = DispatchQueue(label: "cvcam.stats")
    private var timer: DispatchSourceTimer?
    private var last: (time: Double, cpu: Double, analysed: Int)
    private let started: Double

    package init(interval: Double, printer: EventPrinter, latency: LatencyRecorder?, counts: @escaping @Sendable () -> Counts) {
        self.interval = interval
        self.printer = printer
        self.latency = latency
        self.counts = counts
        started = Self.now()
        last = (started, CaptureJob.cpuSeconds(), 0)
    }

    package func start() {
        let t = DispatchSource.makeTimerSource(queue: queue)
        t.schedule(deadline: .now() + interval, repeating: interval)
        t.setEventHandler { [weak self] in self?.report() }
        t.resume()
        timer = t
    }

    /// Stops the timer; a report in progress finishes first.
    package func stop() {
        timer?.cancel()
        timer = nil
        queue.sync {}
    }

    private func report() {
        let now = Self.now()
        let cpu = CaptureJob.cpuSeconds()
        let c = counts()
        let span = max(now - last.time, 1e-6)
        let event = StatsEvent(
            frames: c.frames, analysed: c.analysed, skipped: c.skipped,
            fps: MetadataRecord.rounded(Double(c.analysed - last.analysed) / span, 1),
            detectionMs: latency?.drain(),
            cpu: MetadataRecord.rounded((cpu - last.cpu) / span * 100, 1), rssBytes: Self.residentBytes(),
            seconds: MetadataRecord.rounded(now - started, 3))
        last = (now, cpu, c.analysed)
        printer.emit(event, text: Self.text(event))
    }

    /// "stats: 300 frames, 298 analysed, 29.8 fps, 2 skipped, detection p50 12.1 ms p99 30.4 ms, CPU 85.0%, RSS 142.3 MB".
    package static func text(_ e: StatsEvent) -> String {
        var text = String(format: "stats: %d frames, %d analysed, %.1f fps, %d skipped", e.frames, e.analysed, e.fps, e.skipped)
        if let d = e.detectionMs { text += String(format: ", detection p50 %.1f ms p99 %.1f ms", d.p50, d.p99) }
        return text + String(format: ", CPU %.1f%%, RSS %.1f MB", e.cpu, Double(e.rssBytes) / 1_048_576)
    }

    /// Seconds on the monotonic clock.
    package static func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    /// Resident memory from /proc/self/statm (its second field, in pages); 0 when unreadable.
    package static func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .ascii) else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * sysconf(Int32(_SC_PAGESIZE))
    }
}

/// Times of the stages' per-frame work (one sample per frame and stage), collected between
/// stats reports.
///
/// Threading: thread-safe.
package final class LatencyRecorder: @unchecked Sendable {
    // @unchecked: `samples` is guarded by `lock`.
    private let lock = NSLock()
    private var samples: [Double] = []
    /// Also gets every sample with its stage, as it is recorded (`cvcam serve`'s latency
    /// histogram, one series per stage).
    private let tap: (@Sendable (Stage, Double) -> Void)?

    /// The stage a sample timed.
    package enum Stage: String, Sendable, CaseIterable {
        case faces, codes
    }

    package init(tap: (@Sendable (Stage, Double) -> Void)? = nil) { self.tap = tap }

    package func record(milliseconds: Double, stage: Stage = .faces) {
        lock.withLock { samples.append(milliseconds) }
        tap?(stage, milliseconds)
    }

    /// The median and 99th percentile (nearest rank) of the samples since the last call, which
    /// are then forgotten; nil when there were none.
    package func drain() -> StatsEvent.Percentiles? {
        let taken = lock.withLock {
            defer { samples.removeAll(keepingCapacity: true) }
            return samples
        }
        guard !taken.isEmpty else { return nil }
        let sorted = taken.sorted()
        func rank(_ p: Double) -> Double { sorted[min(sorted.count - 1, Int((p * Double(sorted.count)).rounded(.up)) - 1)] }
        return .init(p50: MetadataRecord.rounded(rank(0.5), 2), p99: MetadataRecord.rounded(rank(0.99), 2))
    }

    /// Runs `body`, recording how long it took as one sample of `stage`.
    package func time<T, E: Error>(_ stage: Stage, _ body: () throws(E) -> T) throws(E) -> T {
        let start = DispatchTime.now().uptimeNanoseconds
        defer { record(milliseconds: Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6, stage: stage) }
        return try body()
    }
}

/// A face stage that records how long each frame's detection and tracking took.
///
/// Threading: the metadata output's face thread, as `FaceMetadataStage` says; the recorder is thread-safe.
package final class TimedFaceStage: FaceMetadataStage {
    package let inner: any FaceMetadataStage
    package let recorder: LatencyRecorder

    package init(_ inner: any FaceMetadataStage, recorder: LatencyRecorder) {
        self.inner = inner
        self.recorder = recorder
    }

    package var isAvailable: Bool { inner.isAvailable }

    package var faceDetectorModel: FaceDetectorModel? { inner.faceDetectorModel }

    package func process(
        _ frame: AnalysisFrame, regionOfInterest: CGRect, updateInterval: Double, scanInterval: Double
    ) throws(CaptureError) -> (faces: [MetadataFaceObject], events: [MetadataEvent]) {
        try recorder.time(.faces) { () throws(CaptureError) in
            try inner.process(frame, regionOfInterest: regionOfInterest, updateInterval: updateInterval, scanInterval: scanInterval)
        }
    }

    package func finish() -> [MetadataEvent] { inner.finish() }

    package func prepare(width: Int, height: Int, regionOfInterest: CGRect) {
        inner.prepare(width: width, height: height, regionOfInterest: regionOfInterest)
    }
}

/// A code stage that records how long each frame's decoding took.
///
/// Threading: the metadata output's code thread, as `CodeMetadataStage` says; the recorder is thread-safe.
package final class TimedCodeStage: CodeMetadataStage {
    package let inner: any CodeMetadataStage
    package let recorder: LatencyRecorder

    package init(_ inner: any CodeMetadataStage, recorder: LatencyRecorder) {
        self.inner = inner
        self.recorder = recorder
    }

    package var availableTypes: [MetadataObjectType] { inner.availableTypes }

    package func process(
        _ frame: AnalysisFrame, types: Set<MetadataObjectType>, regionOfInterest: CGRect, repeatInterval: Double
    ) throws(CaptureError) -> (codes: [MetadataMachineReadableCodeObject], events: [MetadataEvent]) {
        try recorder.time(.codes) { () throws(CaptureError) in
            try inner.process(frame, types: types, regionOfInterest: regionOfInterest, repeatInterval: repeatInterval)
        }
    }

    package func finish() -> [MetadataEvent] { inner.finish() }
}
