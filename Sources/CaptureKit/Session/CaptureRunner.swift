import Dispatch
import Foundation
import Synchronization

/// The capture thread of one input: opens the source, owns the frame clock (pacing of files
/// and synthetic scenes), stamps frames with the input, detects sequence gaps and fans frames
/// out to the connected outputs. One place owns the clock: this one.
///
/// Still formats: between frames of a live source, an output may ask for frames in another
/// format (`requestedStillFormat()`, a photo larger than the active format). The runner then
/// closes the source (for V4L2: `VIDIOC_STREAMOFF`, the descriptor closed so buffers still held
/// as frames cannot block the reallocation), opens it in the still format (`S_FMT`, `S_PARM`,
/// `REQBUFS`, `mmap`, `STREAMON`), hands its frames to that output alone until it has what it
/// needs (the output skips the frames auto exposure needs to settle), and reopens the
/// session's format. The other outputs see the frames not streamed meanwhile as skipped
/// (`sourceSkipped`, a `discontinuity` drop), counted from the timestamps on either side, and
/// then frames in the old format again. Sources that are not live never switch.
///
/// Threading: `start`, `stop`, `setWiring` from the session queue; the loop on its own thread.
final class CaptureRunner: Sendable {
    /// How streaming ended without being asked to stop.
    enum Ending: Sendable {
        case reachedEnd
        case failed(CaptureError)
    }

    /// What the runner tells the session, from the capture thread.
    enum Report: Sendable {
        case ended(Ending)
        case interrupted(CaptureError)
        case interruptionEnded
    }

    typealias Wiring = [(output: CaptureOutput, connection: CaptureConnection)]

    private let input: CaptureDeviceInput
    private let format: CaptureDevice.Format
    private let frameDuration: MediaTime
    private let report: @Sendable (Report) -> Void
    private let cancelled = Atomic<Bool>(false)
    private let wiring: Mutex<Wiring>
    /// The capture thread: the loop is its one job. A thread of its own (not Foundation's
    /// `Thread`, which cannot be joined), so `stop()` returns only once it has exited.
    private let thread = WorkerThread(name: "cvcam.capture")
    private let frameCounter: @Sendable () -> Void
    /// How often a lost live device is retried.
    static let reconnectInterval: Double = 0.5
    /// Most frames streamed in a still format before the runner gives up and goes back (an
    /// output that never gets a usable frame must not hold the video off for long).
    static let maximumStillFrames = 60

    init(
        input: CaptureDeviceInput, format: CaptureDevice.Format, frameDuration: MediaTime, wiring: Wiring,
        countFrame: @escaping @Sendable () -> Void, report: @escaping @Sendable (Report) -> Void
    ) {
        self.frameCounter = countFrame
        self.input = input
        self.format = format
        self.frameDuration = frameDuration
        self.wiring = Mutex(wiring)
        self.report = report
    }

    /// The input this runner streams from.
    var inputID: CaptureInput.ID { input.id }

    /// Whether frames currently go to `output`.
    func wiresOutput(_ output: CaptureOutput) -> Bool {
        wiring.withLock { $0.contains { $0.output === output } }
    }

    /// Replaces the outputs frames go to (a committed configuration while running).
    func setWiring(_ new: Wiring) { wiring.withLock { $0 = new } }

    /// Opens the source on a new capture thread and returns once it is streaming, or throws
    /// what opening threw (the thread is joined first).
    func start() throws(CaptureError) {
        let opened = DispatchSemaphore(value: 0)
        let openError = Mutex<CaptureError?>(nil)
        thread.run { [self] in
            let result = Result { () throws(CaptureError) in
                try input.device.source.open(format: format, frameDuration: frameDuration)
            }
            if case .failure(let error) = result {
                openError.withLock { $0 = error }
                opened.signal()
                return
            }
            opened.signal()
            loop()
        }
        opened.wait()
        if let error = openError.withLock({ $0 }) {
            thread.stopAndJoin()
            throw error
        }
    }

    /// Asks the loop to stop and joins the capture thread (`pthread_join`): once this returns
    /// the source is closed and the thread has exited, not merely finished its work.
    func stop() {
        cancelled.store(true, ordering: .relaxed)
        for (output, _) in wiring.withLock({ $0 }) { output.cancelPendingDeliveries() }
        thread.stopAndJoin()
    }

    private var isCancelled: @Sendable () -> Bool {
        { [self] in self.cancelled.load(ordering: .relaxed) }
    }

    private func loop() {
        let source = input.device.source
        defer { source.close() }
        let paced = !source.isLive && source.pacing == .realTime
        let canWait = !source.isLive && source.pacing == .asFastAsPossible
        var clockStart: UInt64 = 0
        var firstPTS: MediaTime?
        var lastSequence: UInt64?
        var lastPTS: MediaTime?
        var resumedAfterStill = false

        while !isCancelled() {
            let frame: SourceFrame?
            do {
                if source.isLive, let still = stillRequest() {
                    try captureStill(still, from: source)
                    // Sequence numbers restart with the stream; the gap is measured in time.
                    lastSequence = nil
                    resumedAfterStill = true
                    continue
                }
                frame = try source.nextFrame(isCancelled: isCancelled)
            } catch where error.code == .deviceDisconnected && source.isLive {
                report(.interrupted(error))
                guard reconnect(source) else { return }
                report(.interruptionEnded)
                lastSequence = nil
                continue
            } catch {
                // Every good frame before the failure is still delivered.
                for (output, _) in wiring.withLock({ $0 }) { output.drain() }
                report(.ended(.failed(error)))
                return
            }
            guard let frame else {
                if isCancelled() { return }
                for (output, _) in wiring.withLock({ $0 }) { output.drain() }
                report(.ended(.reachedEnd))
                return
            }
            if paced {
                if let firstPTS {
                    // Capped at a day: a file's absurd timestamps must not overflow the deadline.
                    let offset = min(max(0, frame.presentationTimeStamp.seconds - firstPTS.seconds), 86_400)
                    if !sleep(until: clockStart + UInt64(offset * 1e9)) { return }
                } else {
                    firstPTS = frame.presentationTimeStamp
                    clockStart = DispatchTime.now().uptimeNanoseconds
                }
            }
            let sample = SampleBuffer(
                pixelBuffer: frame.pixelBuffer, presentationTimeStamp: frame.presentationTimeStamp,
                duration: frameDuration, sequenceNumber: frame.sequenceNumber, inputID: input.id, jpegData: frame.jpegData)
            let targets = wiring.withLock { $0 }.filter { $0.connection.isEnabled }
            var skipped = 0
            if let last = lastSequence, frame.sequenceNumber > last + 1 {
                skipped = Int(frame.sequenceNumber - last - 1)
            } else if resumedAfterStill, let lastPTS {
                let gap = (frame.presentationTimeStamp.seconds - lastPTS.seconds) / max(frameDuration.seconds, 1e-6)
                // Bounded: timestamps from a file may be anything, even NaN.
                skipped = gap.isFinite ? max(1, Int(min(gap, 1e9).rounded()) - 1) : 1
            }
            if skipped > 0 {
                for (output, connection) in targets {
                    output.sourceSkipped(frames: skipped, before: sample, connection: connection)
                }
            }
            resumedAfterStill = false
            lastSequence = frame.sequenceNumber
            lastPTS = frame.presentationTimeStamp
            frameCounter()
            for (output, connection) in targets {
                output.receive(sample, from: connection, canWait: canWait)
            }
        }
    }

    /// An output waiting for frames in a still format, and that format.
    private struct StillRequest {
        var output: CaptureOutput
        var connection: CaptureConnection
        var format: CaptureDevice.Format
    }

    /// The first enabled output asking for a still format, if any.
    private func stillRequest() -> StillRequest? {
        for (output, connection) in wiring.withLock({ $0 }) where connection.isEnabled {
            if let format = output.requestedStillFormat() {
                return StillRequest(output: output, connection: connection, format: format)
            }
        }
        return nil
    }

    /// Streams `still.format` until its output has what it needs, then reopens the session's
    /// format. A failure in the still format goes to the output; only failing to get the
    /// session's format back throws (handled like any streaming error).
    private func captureStill(_ still: StillRequest, from source: any FrameSource) throws(CaptureError) {
        source.close()
        let stillDuration = still.format.minFrameDuration ?? frameDuration
        var failure: CaptureError?
        do throws(CaptureError) {
            try source.open(format: still.format, frameDuration: stillDuration)
            var streamed = 0
            var done = false
            while !done && !isCancelled() && streamed < Self.maximumStillFrames {
                guard let frame = try source.nextFrame(isCancelled: isCancelled) else { break }
                let sample = SampleBuffer(
                    pixelBuffer: frame.pixelBuffer, presentationTimeStamp: frame.presentationTimeStamp,
                    duration: stillDuration, sequenceNumber: frame.sequenceNumber, inputID: input.id, jpegData: frame.jpegData)
                frameCounter()
                done = still.output.receiveStill(sample, format: still.format, from: still.connection)
                streamed += 1
            }
            if !done && !isCancelled() {
                failure = CaptureError(
                    .deviceFailure,
                    "\(input.device.localizedName) gave no usable frame in \(streamed) frames at \(still.format.dimensions); the session went back to \(format.dimensions)")
            }
        } catch {
            failure = error
        }
        if let failure { still.output.stillFormatFailed(still.format, error: failure) }
        source.close()
        if isCancelled() { return }
        try source.open(format: format, frameDuration: frameDuration)
    }

    /// Sleeps until the monotonic deadline, waking early to honour cancellation.
    /// Returns false when cancelled.
    private func sleep(until deadline: UInt64) -> Bool {
        while true {
            if isCancelled() { return false }
            let now = DispatchTime.now().uptimeNanoseconds
            guard now < deadline else { return true }
            let chunk = min(deadline - now, 20_000_000)
            var ts = timespec(tv_sec: 0, tv_nsec: Int(chunk))
            nanosleep(&ts, nil)
        }
    }

    /// Retries opening a lost live device until it comes back or the runner is stopped.
    private func reconnect(_ source: any FrameSource) -> Bool {
        source.close()
        while !isCancelled() {
            if !sleep(until: DispatchTime.now().uptimeNanoseconds + UInt64(Self.reconnectInterval * 1e9)) {
                return false
            }
            if (try? source.open(format: format, frameDuration: frameDuration)) != nil { return true }
        }
        return false
    }
}
