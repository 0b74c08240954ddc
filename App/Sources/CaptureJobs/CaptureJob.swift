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
package final class CaptureJob: @unchecked Sendable {
    // @unchecked: `interrupted` and `startedAt` are written before or by the signal handler and
    // read after the session stopped; the session itself is thread-safe.

    package let session = CaptureSession()
    package let device: CaptureDevice
    package let input: CaptureDeviceInput
    package let options: InputOptions
    package let printer: EventPrinter
    package let statusLine: StatusLine?
    private var dropTimer: DispatchSourceTimer?
    package private(set) var interrupted = false
    package private(set) var startedAt = Date()
    package private(set) var runtimeError: CaptureError?

    /// -q in text mode: no start line.
    private let quiet: Bool

    /// Opens the input and prepares a session with the preset the options ask for. `device`,
    /// when given, replaces the one the options name (snap repeats a single image this way).
    package init(input options: InputOptions, output: OutputOptions, device chosen: CaptureDevice? = nil) throws {
        quiet = output.quiet && !output.json
        self.options = options
        device = try chosen ?? options.makeDevice()
        input = try CaptureDeviceInput(device: device)
        // Said in the CLI's words: the session's own message names the Swift preset.
        if options.sessionPreset.format(for: device) == nil {
            let offered = Set(device.formats.map(\.dimensions.description)).sorted().joined(separator: ", ")
            throw CLIError.message(
                "\(device.localizedName) cannot deliver --preset \(options.sessionPreset.rawValue); it offers \(offered). Leave --preset out, or use --preset inputPriority to keep its own size.")
        }
        try session.setSessionPreset(options.sessionPreset)
        try session.addInput(input)
        statusLine = output.json ? nil : StatusLine.makeIfTerminal(quiet: output.quiet)
        let frame = options.sessionPreset.format(for: device)?.dimensions ?? device.activeFormat.dimensions
        printer = EventPrinter(
            json: output.json, quiet: output.quiet, preview: try PreviewMapping(options: options, frame: frame),
            statusLine: statusLine, clock: device.source.timestampClock)
        statsInterval = output.statsInterval
        // Now, not at `run`: the command still loads its models, and a signal meanwhile must
        // end the run rather than kill the process or be lost.
        installSignalHandlers()
    }

    /// The start line: the run's ID, the input and which clock times are on. JSON: a `start`
    /// event on stdout; text: a line on stderr (unless -q), so stdout holds only events.
    package func announceStart() {
        let input = summaryInput
        let clock = printer.clockDescription
        if printer.json {
            printer.emit(StartEvent(run: RunID.current, clock: clock.json, input: input), text: "")
        } else if !quiet {
            TerminalText.printError("cvcam: run \(RunID.current): \(input.kind) \"\(input.name)\" at \(input.size); \(clock.text)")
        }
    }

    /// --stats-interval, and what the stats report: the session's frames unless a command says more
    /// (`analyse` does), and per-frame detection times when a command records them.
    package let statsInterval: Double?
    package var statsCounts: (@Sendable () -> StatsReporter.Counts)?
    package var latency: LatencyRecorder?

    /// Adds an output, applying --rotate and --mirror to its connection.
    package func add(_ output: CaptureOutput) throws {
        try session.addOutput(output)
        options.orient(output)
    }

    /// Total frames the input will produce, when known (files, folders, finite scenes).
    package var expectedFrameCount: Int? {
        switch device.source {
        case let file as VideoFileSource: file.declaredFrameCount > 0 ? file.declaredFrameCount : nil
        case let folder as ImageFolderSource: folder.loops ? nil : folder.files.count
        case let synthetic as SyntheticCameraSource: synthetic.scene.frameCount
        default: nil
        }
    }

    /// Starts the session and blocks until it stops by itself or a signal stops it.
    /// `status` gives the status line's text (called twice a second when stderr is a terminal).
    package func run(status: @escaping @Sendable () -> String) throws {
        announceStart()
        let sessionEvents = CameraEvents(printer: printer)
        let observation = session.observeEvents(on: sessionEvents.queue) { sessionEvents.handle($0) }
        startedAt = Date()
        if interrupted { throw ExitCode(ExitStatus.interruptedDuringStartup) }
        do {
            try session.startRunning()
        } catch {
            if interrupted { throw ExitCode(ExitStatus.interruptedDuringStartup) }
            throw error
        }
        // A signal handled while the session was starting may have found nothing to stop.
        if interrupted { try? session.stopRunning() }
        if let format = CameraEvents.formatEvent(device), !quiet {
            printer.emit(format.event, text: "format: " + format.text)
        }
        statusLine?.start(render: status)
        let stats = statsInterval.map { interval in
            StatsReporter(
                interval: interval, printer: printer, latency: latency,
                counts: statsCounts ?? { [session] in
                    .init(frames: session.capturedFrameCount, analysed: session.capturedFrameCount, skipped: 0)
                })
        }
        stats?.start()
        session.waitUntilStopped()
        stats?.stop()
        statusLine?.stop()
        // An unplug that ended, or a stop while unplugged, is not a failure: only the error that
        // stopped the session counts (its event was queued before the session said it stopped;
        // a failed restart after a reconfiguration has no event, only the session's last error).
        sessionEvents.queue.sync {}
        observation.cancel()
        runtimeError =
            sessionEvents.stoppingError ?? session.lastRuntimeError.flatMap { $0.code == .deviceDisconnected ? nil : $0 }
        // The next input of the run installs its own.
        StopSignals.unregister()
    }

    /// Reports skipped frames at most once a second: a `drop` event with how many frames were
    /// skipped since the last report (`count`) and in all (`total`). `skipped` is read on a
    /// timer queue; a final report is made by `finishDropReports()`.
    package func reportDrops(reason: String, skipped: @escaping @Sendable () -> Int) {
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
    package func finishDropReports() {
        dropTimer?.cancel()
        dropTimer = nil
        finalDropReport?()
    }

    /// Runs a metadata-analysing command's input to the end: drop reports, the status line
    /// (fps, skipped, CPU, `noun` found, progress for files) and the runtime error, if any.
    /// The summary is the caller's (one for every input of the run).
    package func analyse(_ metadata: CaptureMetadataOutput, noun: String, found: @escaping @Sendable () -> Int) throws -> Outcome {
        reportDrops(reason: "frameWasLate") { metadata.skippedFrameCount }
        statsCounts = { [session] in
            .init(frames: session.capturedFrameCount, analysed: metadata.analysedFrameCount, skipped: metadata.skippedFrameCount)
        }
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
        return Outcome(
            frames: session.capturedFrameCount, analysed: metadata.analysedFrameCount, skipped: metadata.skippedFrameCount,
            seconds: elapsed, found: found(), failed: runtimeError != nil, interrupted: interrupted,
            input: summary(processed: 0, skipped: 0).input, formatSummary: formatSummary)
    }

    /// What one input of an analysing command came to.
    package struct Outcome {
        package var frames: Int
        package var analysed: Int
        package var skipped: Int
        package var seconds: Double
        package var found: Int
        package var failed: Bool
        package var interrupted: Bool
        package var input: SummaryEvent.Input
        /// ", camera MJPG 1280x720@30" for a camera, "" otherwise (`formatSummary`).
        package var formatSummary: String

        /// Creates the value from each of its properties.
        package init(frames: Int, analysed: Int, skipped: Int, seconds: Double, found: Int, failed: Bool, interrupted: Bool, input: SummaryEvent.Input, formatSummary: String) {
            self.frames = frames
            self.analysed = analysed
            self.skipped = skipped
            self.seconds = seconds
            self.found = found
            self.failed = failed
            self.interrupted = interrupted
            self.input = input
            self.formatSummary = formatSummary
        }
    }

    /// Seconds since the session started.
    package var elapsed: Double { Date().timeIntervalSince(startedAt) }

    /// How long a stop asked for by SIGINT/SIGTERM may take before the process ends anyway. The
    /// stop waits for the frame being analysed and a network camera's read in progress (so no
    /// thread is inside OpenCV or FFmpeg at exit), which a loaded machine can stretch past a
    /// second; a read from a camera gone silent ends within its read timeout (5 s by default).
    package static let signalGracePeriod = 5.0
    /// Set once the stop a signal asked for has returned (see `installSignalHandlers`).
    private let stopReturned = Atomic<Bool>(false)

    /// SIGINT/SIGTERM stop the session; if the stop has not returned `signalGracePeriod` later
    /// (a read blocked in the kernel or a decoder), or on a second signal, the process `_exit`s
    /// with 128 + the signal number, so a signal always ends cvcam. A stop that returned in
    /// time disarms the watchdog: finishing files and the summary are not cut short.
    private func installSignalHandlers() {
        StopSignals.register { [weak self] sig in
            guard let self, !self.interrupted else { _exit(128 + sig) }
            self.interrupted = true
            DispatchQueue.global().asyncAfter(deadline: .now() + Self.signalGracePeriod) {
                if !self.stopReturned.load(ordering: .acquiring) { _exit(128 + sig) }
            }
            // Off the signal thread, so a stop that blocks cannot hold back the second signal.
            DispatchQueue.global().async {
                try? self.session.stopRunning()
                self.stopReturned.store(true, ordering: .releasing)
            }
        }
    }

    /// CPU seconds this process has used (user + system).
    package static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 + Double(usage.ru_stime.tv_sec)
            + Double(usage.ru_stime.tv_usec) / 1e6
    }

    /// The runtime error, as an event line, when the session stopped because of one.
    package func reportRuntimeError() {
        guard let error = runtimeError else { return }
        printer.emit(
            ErrorEvent(error),
            text: "error: \(error.message)")
    }

    /// The summary with its common fields; each command adds its own.
    package func summary(processed: Int, skipped: Int) -> SummaryEvent {
        SummaryEvent(
            frames: session.capturedFrameCount, analysed: processed, skipped: skipped, seconds: elapsed, input: summaryInput)
    }

    /// The input for the start line and the summary; a camera's negotiated format once it
    /// streams, a network camera's frame rate.
    private var summaryInput: SummaryEvent.Input {
        SummaryEvent.Input(
            kind: options.inputKind, name: device.localizedName, size: device.activeFormat.dimensions.description,
            format: device.lastNegotiation?.granted.description, adjusted: device.lastNegotiation?.wasAdjusted,
            frameRate: (device.source as? NetworkStreamSource).map { MetadataRecord.rounded($0.framesPerSecond, 2) })
    }

    /// The negotiated camera format for a text summary (", camera MJPG 1280x720@30"), "" for other inputs.
    package var formatSummary: String {
        guard let negotiation = device.lastNegotiation else { return "" }
        return ", camera \(negotiation)"
    }
}

/// The last count a drop report printed.
private final class LastCount: @unchecked Sendable {
    // @unchecked: guarded by `lock`.
    private let lock = NSLock()
    private var value = 0
    /// Stores `new`, returns how much it grew.
    package func swap(_ new: Int) -> Int {
        lock.withLock {
            defer { value = new }
            return new - value
        }
    }
}
