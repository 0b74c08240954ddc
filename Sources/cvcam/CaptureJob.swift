import ArgumentParser
import CaptureKit
import Dispatch
import Foundation
import Synchronization
import Logging

/// Runs one capturing subcommand: opens the input, runs the session until the input ends or
/// SIGINT/SIGTERM arrives, and reports how it went. Shared by faces, scan, snap, watch, record.
///
/// Threading: create and run on the main thread; signal handling runs on its own queue.
final class CaptureJob: @unchecked Sendable {
    // @unchecked: `interrupted` and `startedAt` are written before or by the signal handler and
    // read after the session stopped; the session itself is thread-safe.

    let session = CaptureSession()
    let device: CaptureDevice
    let input: CaptureDeviceInput
    let options: InputOptions
    let printer: EventPrinter
    let statusLine: StatusLine?
    private var signalSources: [DispatchSourceSignal] = []
    private var dropTimer: DispatchSourceTimer?
    private(set) var interrupted = false
    private(set) var startedAt = Date()
    private(set) var runtimeError: CaptureError?

    /// Opens the input and prepares a session with the preset the options ask for. `device`,
    /// when given, replaces the one the options name (snap repeats a single image this way).
    init(input options: InputOptions, output: OutputOptions, device chosen: CaptureDevice? = nil) throws {
        LoggingSystem.bootstrap { label in
            EscapingLogHandler(label: label, logLevel: output.verbose ? .debug : .warning)
        }
        self.options = options
        device = try chosen ?? options.makeDevice()
        input = try CaptureDeviceInput(device: device)
        try session.setSessionPreset(options.sessionPreset)
        try session.addInput(input)
        statusLine = output.json ? nil : StatusLine.makeIfTerminal(quiet: output.quiet)
        let frame = options.sessionPreset.format(for: device)?.dimensions ?? device.activeFormat.dimensions
        printer = EventPrinter(json: output.json, preview: try PreviewMapping(options: options, frame: frame), statusLine: statusLine)
    }

    /// Adds an output, applying --rotate and --mirror to its connection.
    func add(_ output: CaptureOutput) throws {
        try session.addOutput(output)
        if let connection = output.connection(with: .video) {
            connection.videoRotationAngle = Double(options.rotate.degrees)
            connection.isVideoMirrored = options.mirror
        }
    }

    /// Total frames the input will produce, when known (files, folders, finite scenes).
    var expectedFrameCount: Int? {
        switch device.source {
        case let file as VideoFileSource: file.declaredFrameCount > 0 ? file.declaredFrameCount : nil
        case let folder as ImageFolderSource: folder.loops ? nil : folder.files.count
        case let synthetic as SyntheticCameraSource: synthetic.scene.frameCount
        default: nil
        }
    }

    /// Starts the session and blocks until it stops by itself or a signal stops it.
    /// `status` gives the status line's text (called twice a second when stderr is a terminal).
    func run(status: @escaping @Sendable () -> String) throws {
        installSignalHandlers()
        startedAt = Date()
        do {
            try session.startRunning()
        } catch {
            if interrupted { throw ExitCode(ExitStatus.interruptedDuringStartup) }
            throw error
        }
        statusLine?.start(render: status)
        session.waitUntilStopped()
        statusLine?.stop()
        runtimeError = session.lastRuntimeError
    }

    /// Reports skipped frames at most once a second: a `drop` event with how many frames were
    /// skipped since the last report (`count`) and in all (`total`). `skipped` is read on a
    /// timer queue; a final report is made by `finishDropReports()`.
    func reportDrops(reason: String, skipped: @escaping @Sendable () -> Int) {
        let last = LastCount()
        let report: @Sendable () -> Void = { [printer] in
            let total = skipped()
            let count = last.swap(total)
            guard count > 0 else { return }
            printer.emit(
                DropEvent(reason: reason, count: count, total: total),
                text: "drop: \(count) frame(s) skipped (\(reason)), \(total) in all")
        }
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "cvcam.drops"))
        timer.schedule(deadline: .now() + 1, repeating: 1)
        timer.setEventHandler(handler: report)
        timer.resume()
        dropTimer = timer
        finalDropReport = report
    }
    private var finalDropReport: (@Sendable () -> Void)?

    /// Stops the drop timer and reports what it has not reported yet.
    func finishDropReports() {
        dropTimer?.cancel()
        dropTimer = nil
        finalDropReport?()
    }

    /// Runs a metadata-analysing command to the end: drop reports, the status line (fps,
    /// skipped, CPU, `noun` found, progress for files), then the runtime error and the summary
    /// (`found()` in `summaryField`; `phrase` for text, e.g. "faces seen"). Throws exit 1 after a
    /// runtime error.
    func runAnalysing(
        _ metadata: CaptureMetadataOutput, output: OutputOptions, noun: String,
        summaryField: WritableKeyPath<SummaryEvent, Int?>, phrase: String, found: @escaping @Sendable () -> Int
    ) throws {
        reportDrops(reason: "frameWasLate") { metadata.skippedFrameCount }
        let total = expectedFrameCount
        let started = CaptureJob.cpuSeconds()
        try run { [self] in
            let done = metadata.processedFrameCount
            let seconds = max(elapsed, 0.001)
            let cpu = (CaptureJob.cpuSeconds() - started) / seconds * 100
            var text = String(
                format: "%.1f fps  skipped %d  CPU %.0f%%  %@ %d", Double(done) / seconds, metadata.skippedFrameCount,
                cpu, noun, found())
            if let total { text += "  " + StatusLine.progress(done: done, total: total, perSecond: Double(done) / seconds) }
            return text
        }
        metadata.waitUntilIdle()
        finishDropReports()
        reportRuntimeError()
        if !output.quiet || output.json {
            var summary = summary(processed: metadata.processedFrameCount, skipped: metadata.skippedFrameCount)
            summary[keyPath: summaryField] = found()
            printer.emit(
                summary,
                text: String(
                    format: "summary: %d frames, %d analysed at %.1f fps, %d skipped, %d %@", session.capturedFrameCount,
                    metadata.processedFrameCount, summary.fps, metadata.skippedFrameCount, found(), phrase))
        }
        if runtimeError != nil { throw ExitCode(ExitStatus.runtimeError) }
    }

    /// Seconds since the session started.
    var elapsed: Double { Date().timeIntervalSince(startedAt) }

    /// How long a stop asked for by SIGINT/SIGTERM may take before the process ends anyway.
    static let signalGracePeriod = 1.0
    /// Set once the stop a signal asked for has returned (see `installSignalHandlers`).
    private let stopReturned = Atomic<Bool>(false)

    /// SIGINT/SIGTERM stop the session; if the stop has not returned `signalGracePeriod` later
    /// (a read blocked in the kernel or a decoder), or on a second signal, the process `_exit`s
    /// with 128 + the signal number, so a signal always ends cvcam. A stop that returned in
    /// time disarms the watchdog: finishing files and the summary are not cut short.
    private func installSignalHandlers() {
        let queue = DispatchQueue(label: "cvcam.signals")
        for sig in [SIGINT, SIGTERM] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: queue)
            source.setEventHandler { [weak self] in
                guard let self, !self.interrupted else { _exit(128 + sig) }
                self.interrupted = true
                DispatchQueue.global().asyncAfter(deadline: .now() + Self.signalGracePeriod) {
                    if !self.stopReturned.load(ordering: .acquiring) { _exit(128 + sig) }
                }
                // Off this queue, so a stop that blocks cannot hold back the second signal.
                DispatchQueue.global().async {
                    try? self.session.stopRunning()
                    self.stopReturned.store(true, ordering: .releasing)
                }
            }
            source.resume()
            signalSources.append(source)
        }
    }

    /// CPU seconds this process has used (user + system).
    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 + Double(usage.ru_stime.tv_sec)
            + Double(usage.ru_stime.tv_usec) / 1e6
    }

    /// The runtime error, as an event line, when the session stopped because of one.
    func reportRuntimeError() {
        guard let error = runtimeError else { return }
        printer.emit(
            ErrorEvent(error),
            text: "error: \(error.message)")
    }

    /// The summary with its common fields; each command adds its own.
    func summary(processed: Int, skipped: Int) -> SummaryEvent {
        SummaryEvent(
            frames: session.capturedFrameCount, analysed: processed, skipped: skipped, seconds: elapsed,
            input: SummaryEvent.Input(
                kind: options.inputKind, name: device.localizedName, size: device.activeFormat.dimensions.description,
                frameRate: (device.source as? NetworkStreamSource).map { MetadataRecord.rounded($0.framesPerSecond, 2) }))
    }
}

/// The last count a drop report printed.
private final class LastCount: @unchecked Sendable {
    // @unchecked: guarded by `lock`.
    private let lock = NSLock()
    private var value = 0
    /// Stores `new`, returns how much it grew.
    func swap(_ new: Int) -> Int {
        lock.withLock {
            defer { value = new }
            return new - value
        }
    }
}
