import Dispatch
import Foundation
import Synchronization

/// The capture thread of one input: opens the source, owns the frame clock (pacing of files
/// and synthetic scenes), stamps frames with the input, detects sequence gaps and fans frames
/// out to the connected outputs. One place owns the clock: this one.
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
    private let finished = DispatchSemaphore(value: 0)
    private let frameCounter: @Sendable () -> Void
    /// How often a lost live device is retried.
    static let reconnectInterval: Double = 0.5

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
    /// what opening threw.
    func start() throws(CaptureError) {
        let opened = DispatchSemaphore(value: 0)
        let openError = Mutex<CaptureError?>(nil)
        let thread = Thread { [self] in
            let result = Result { () throws(CaptureError) in
                try input.device.source.open(format: format, frameDuration: frameDuration)
            }
            if case .failure(let error) = result {
                openError.withLock { $0 = error }
                opened.signal()
                finished.signal()
                return
            }
            opened.signal()
            loop()
            finished.signal()
        }
        thread.name = "cvcam.capture.\(input.id)"
        thread.start()
        opened.wait()
        if let error = openError.withLock({ $0 }) { throw error }
    }

    /// Asks the loop to stop and waits for the capture thread to finish (the source is closed).
    func stop() {
        cancelled.store(true, ordering: .relaxed)
        for (output, _) in wiring.withLock({ $0 }) { output.cancelPendingDeliveries() }
        finished.wait()
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

        while !isCancelled() {
            let frame: SourceFrame?
            do {
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
                    let offset = max(0, frame.presentationTimeStamp.seconds - firstPTS.seconds)
                    if !sleep(until: clockStart + UInt64(offset * 1e9)) { return }
                } else {
                    firstPTS = frame.presentationTimeStamp
                    clockStart = DispatchTime.now().uptimeNanoseconds
                }
            }
            let sample = SampleBuffer(
                pixelBuffer: frame.pixelBuffer, presentationTimeStamp: frame.presentationTimeStamp,
                duration: frameDuration, sequenceNumber: frame.sequenceNumber, inputID: input.id)
            let targets = wiring.withLock { $0 }.filter { $0.connection.isEnabled }
            if let last = lastSequence, frame.sequenceNumber > last + 1 {
                let skipped = Int(frame.sequenceNumber - last - 1)
                for (output, connection) in targets {
                    output.sourceSkipped(frames: skipped, before: sample, connection: connection)
                }
            }
            lastSequence = frame.sequenceNumber
            frameCounter()
            for (output, connection) in targets {
                output.receive(sample, from: connection, canWait: canWait)
            }
        }
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
