import Dispatch
import Foundation
import Logging
import Synchronization

/// Connects an input to outputs and runs the flow of frames between them (`AVCaptureSession`).
///
/// ## States
/// ```
///            startRunning()                stopRunning(), end of input, runtime error
///  stopped ───────────────▶ running ─────────────────────────────────────────▶ stopped
///                            │    ▲
///              device lost   ▼    │  device back
///                         interrupted ── stopRunning() ──▶ stopped
/// ```
/// AVFoundation's spellings work as there: `session.sessionPreset = .high` (a preset the input
/// cannot deliver stops the program, as AVFoundation raises: check `canSetSessionPreset(_:)`),
/// and a failure while running arrives as a `.runtimeError` event. The throwing forms
/// (`setSessionPreset(_:)`, `addInput(_:)`, …) say what went wrong to a Swift caller.
///
/// Illegal calls throw a specific `CaptureError`: `startRunning` while running or interrupted
/// (`.sessionAlreadyRunning`), inside a configuration block (`.sessionIsConfiguring`) or with
/// no input (`.sessionHasNoInputs`); `stopRunning` while stopped (`.sessionNotRunning`);
/// `commitConfiguration` without `beginConfiguration` (`.unbalancedCommitConfiguration`);
/// adding or removing while running outside a configuration block
/// (`.configurationRequiresBeginConfiguration`).
///
/// ## Configuration
/// `beginConfiguration`/`commitConfiguration` nest; changes made inside are applied at the
/// outermost commit (the preset is resolved to a device format, running outputs rewired).
/// A session takes one video input; connections to each output are made automatically.
///
/// ## Events
/// `events()` gives an AsyncStream per caller of `Event`s: did start, did stop, runtime
/// error, interruption, interruption ended, end of input.
///
/// ## Threading
/// Thread-safe. All operations run on the session's serial queue; `startRunning` and
/// `stopRunning` block until done, so call them off the main thread. Each input streams on its
/// own capture thread; outputs deliver on their delegates' queues.
public final class CaptureSession: @unchecked Sendable {
    // @unchecked: every mutable property is either behind `state` (a Mutex) or touched only
    // on `sessionQueue`.

    /// Where the session is in its life (see the state diagram).
    public enum RunState: String, Sendable {
        case stopped, running, interrupted
    }

    /// Something that happened to a running session (AVFoundation's session notifications).
    public enum Event: Sendable, CustomStringConvertible {
        /// Streaming started (`AVCaptureSessionDidStartRunning`).
        case didStartRunning
        /// Streaming stopped, whatever the cause (`AVCaptureSessionDidStopRunning`).
        case didStopRunning
        /// A file, folder or finite synthetic input delivered its last frame.
        case inputDidReachEnd(CaptureInput.ID)
        /// Streaming failed and the session stopped (`AVCaptureSessionRuntimeError`).
        case runtimeError(CaptureError)
        /// The device went away; the session waits for it (`AVCaptureSessionWasInterrupted`).
        case wasInterrupted(CaptureError)
        /// The device came back and streaming resumed (`AVCaptureSessionInterruptionEnded`).
        case interruptionEnded
        /// A problem that did not stop streaming: an unreadable image skipped in a folder, a
        /// device setting the camera refused (`device.focusMode = …`).
        case warning(CaptureError)

        public var description: String {
            switch self {
            case .didStartRunning: "didStartRunning"
            case .didStopRunning: "didStopRunning"
            case .inputDidReachEnd(let id): "inputDidReachEnd(\(id))"
            case .runtimeError(let e): "runtimeError(\(e.code): \(e.message))"
            case .wasInterrupted(let e): "wasInterrupted(\(e.code): \(e.message))"
            case .interruptionEnded: "interruptionEnded"
            case .warning(let e): "warning(\(e.code): \(e.message))"
            }
        }
    }

    private struct State {
        var runState = RunState.stopped
        var inputs: [CaptureDeviceInput] = []
        var outputs: [CaptureOutput] = []
        var preset = SessionPreset.high
        var configurationDepth = 0
        var subscribers: [UUID: @Sendable (Event) -> Void] = [:]
        var lastError: CaptureError?
    }
    private let state = Mutex(State())
    private let stateChanged = NSCondition()
    private let sessionQueue = DispatchQueue(label: "cvcam.session")
    private var runner: CaptureRunner?  // session queue only
    private var runnerGeneration = 0  // session queue only
    private let logger = Logger(label: "cvcam.session")
    private let framesCaptured = Atomic<Int>(0)

    /// Frames the input has produced since the session was created (all runs).
    public var capturedFrameCount: Int { framesCaptured.load(ordering: .relaxed) }

    /// Creates a stopped session with the `.high` preset.
    public init() {}

    // MARK: State

    /// The current state.
    public var runState: RunState { state.withLock { $0.runState } }
    /// Whether frames are flowing (`isRunning`).
    public var isRunning: Bool { runState == .running }
    /// Whether the device was lost and the session waits for it (`isInterrupted`).
    public var isInterrupted: Bool { runState == .interrupted }
    /// The inputs (at most one).
    public var inputs: [CaptureInput] { state.withLock { $0.inputs } }
    /// The outputs.
    public var outputs: [CaptureOutput] { state.withLock { $0.outputs } }
    /// The active preset (`sessionPreset`; `.high` by default).
    ///
    /// Setting it works as `setSessionPreset(_:)`, without `try`: a preset the input cannot
    /// deliver stops the program (a precondition, as AVFoundation raises; check
    /// `canSetSessionPreset(_:)` first), and a running session that cannot reopen its device in
    /// the new format stops with a `.runtimeError` event.
    public var sessionPreset: SessionPreset {
        get { state.withLock { $0.preset } }
        set {
            precondition(
                canSetSessionPreset(newValue),
                "sessionPreset: the input cannot deliver the \(newValue) preset; check canSetSessionPreset(_:) first")
            let wasRunning = runState != .stopped
            do {
                try setSessionPreset(newValue)
            } catch {
                sessionQueue.sync { failAtRunTime(error, wasRunning: wasRunning) }
            }
        }
    }
    /// The error that last stopped the session, if any.
    public var lastRuntimeError: CaptureError? { state.withLock { $0.lastError } }

    // MARK: Configuration

    /// Starts a configuration block; blocks nest (`beginConfiguration`).
    public func beginConfiguration() {
        sessionQueue.sync { state.withLock { $0.configurationDepth += 1 } }
    }

    /// Ends a configuration block; the outermost commit applies every change made inside
    /// (`commitConfiguration`).
    ///
    /// - Throws: `.unbalancedCommitConfiguration` without a matching begin;
    ///   `.presetNotSupported` when the preset chosen inside cannot be delivered by the input
    ///   (the configuration is still committed, with the device's current format).
    public func commitConfiguration() throws(CaptureError) {
        try onSessionQueue { () throws(CaptureError) in
            let depth = try state.withLock { (s: inout State) throws(CaptureError) -> Int in
                guard s.configurationDepth > 0 else {
                    throw CaptureError(
                        .unbalancedCommitConfiguration, "commitConfiguration() without a matching beginConfiguration()")
                }
                s.configurationDepth -= 1
                return s.configurationDepth
            }
            if depth == 0 { try applyConfiguration() }
        }
    }

    /// Whether `preset` can be used with the current input (`canSetSessionPreset`).
    public func canSetSessionPreset(_ preset: SessionPreset) -> Bool {
        guard let input = state.withLock({ $0.inputs.first }) else { return true }
        return preset.format(for: input.device) != nil
    }

    /// Chooses a preset. Outside a configuration block it applies at once; inside, at the commit.
    ///
    /// - Throws: `.presetNotSupported` when the input cannot deliver it (nothing changes).
    public func setSessionPreset(_ preset: SessionPreset) throws(CaptureError) {
        try onSessionQueue { () throws(CaptureError) in
            let (input, depth) = state.withLock { ($0.inputs.first, $0.configurationDepth) }
            if let input, preset.format(for: input.device) == nil {
                throw presetError(preset, input.device)
            }
            state.withLock { $0.preset = preset }
            if depth == 0 { try applyConfiguration() }
        }
    }

    /// Whether `input` could be added now (`canAddInput`).
    public func canAddInput(_ input: CaptureInput) -> Bool {
        (try? checkAdd(input: input)) != nil
    }

    /// Adds the input and connects it to every output (`addInput`).
    ///
    /// - Throws: `.inputAlreadyAdded` (this or another session has it), `.inputLimitReached`
    ///   (one video input per session), `.presetNotSupported` (the preset does not fit it),
    ///   `.configurationRequiresBeginConfiguration` (running, outside a configuration block).
    public func addInput(_ input: CaptureInput) throws(CaptureError) {
        try onSessionQueue { () throws(CaptureError) in
            let deviceInput = try checkAdd(input: input)
            deviceInput.owner.withLock { $0 = ObjectIdentifier(self) }
            // A device setting the camera refused (`device.focusMode = …`) reaches this session's events.
            deviceInput.device.settingFailureObservers.withLock {
                $0[ObjectIdentifier(self)] = { [weak self] error in self?.emit(.warning(error)) }
            }
            state.withLock { $0.inputs.append(deviceInput) }
            try applyIfNotConfiguring()
        }
    }

    /// Removes the input and its connections (`removeInput`).
    ///
    /// - Throws: `.inputNotInSession`, `.configurationRequiresBeginConfiguration`.
    public func removeInput(_ input: CaptureInput) throws(CaptureError) {
        try onSessionQueue { () throws(CaptureError) in
            try requireConfigurable("remove an input")
            let removed = state.withLock { s -> Bool in
                guard let i = s.inputs.firstIndex(where: { $0 === input }) else { return false }
                s.inputs.remove(at: i)
                return true
            }
            guard removed else {
                throw CaptureError(.inputNotInSession, "removeInput: the input is not in this session")
            }
            input.owner.withLock { $0 = nil }
            if let deviceInput = input as? CaptureDeviceInput {
                _ = deviceInput.device.settingFailureObservers.withLock { $0.removeValue(forKey: ObjectIdentifier(self)) }
            }
            try applyIfNotConfiguring()
        }
    }

    /// Whether `output` could be added now (`canAddOutput`).
    public func canAddOutput(_ output: CaptureOutput) -> Bool {
        (try? checkAdd(output: output)) != nil
    }

    /// Adds the output and connects the input to it (`addOutput`).
    ///
    /// - Throws: `.outputAlreadyAdded`, `.configurationRequiresBeginConfiguration`.
    public func addOutput(_ output: CaptureOutput) throws(CaptureError) {
        try onSessionQueue { () throws(CaptureError) in
            try checkAdd(output: output)
            output.owner.withLock { $0 = ObjectIdentifier(self) }
            output.runtimeErrorSink.withLock {
                $0 = { [weak self] error in
                    guard let self else { return }
                    self.sessionQueue.async { self.failAtRunTime(error, wasRunning: self.runState != .stopped) }
                }
            }
            state.withLock { $0.outputs.append(output) }
            try applyIfNotConfiguring()
        }
    }

    /// Removes the output and its connections (`removeOutput`).
    ///
    /// - Throws: `.outputNotInSession`, `.configurationRequiresBeginConfiguration`.
    public func removeOutput(_ output: CaptureOutput) throws(CaptureError) {
        try onSessionQueue { () throws(CaptureError) in
            try requireConfigurable("remove an output")
            let removed = state.withLock { s -> Bool in
                guard let i = s.outputs.firstIndex(where: { $0 === output }) else { return false }
                s.outputs.remove(at: i)
                return true
            }
            guard removed else {
                throw CaptureError(.outputNotInSession, "removeOutput: the output is not in this session")
            }
            output.owner.withLock { $0 = nil }
            output.runtimeErrorSink.withLock { $0 = nil }
            output.setConnections([])
            try applyIfNotConfiguring()
        }
    }

    // MARK: Running

    /// Starts streaming and returns once the input is open (`startRunning`). Blocks: call it off
    /// the main thread.
    ///
    /// - Throws: `.sessionAlreadyRunning`, `.sessionIsConfiguring`, `.sessionHasNoInputs`, or
    ///   whatever opening the device threw (`.deviceBusy`, `.permissionDenied`, …).
    public func startRunning() throws(CaptureError) {
        try onSessionQueue { () throws(CaptureError) in try startStreaming(announce: true) }
    }

    /// Stops streaming and waits until it has stopped (`stopRunning`): the capture thread and
    /// the input's own threads (a network camera's connection) are joined, and no output is
    /// still working on a frame (detection, conversion, photo encoding, the movie's last
    /// frames and its index are written). So `stopRunning(); exit(0)` never finds a thread
    /// inside OpenCV or FFmpeg. A network camera's read in progress is waited for, at most its
    /// read timeout when the camera went silent. Frames not yet started are dropped and counted.
    ///
    /// Do not call it from an output's delegate while another thread waits on that delegate.
    ///
    /// - Throws: `.sessionNotRunning` when the session is already stopped.
    public func stopRunning() throws(CaptureError) {
        try onSessionQueue { () throws(CaptureError) in
            guard runState != .stopped else {
                throw CaptureError(.sessionNotRunning, "stopRunning(): the session is not running")
            }
            finishRunning(with: nil)
        }
    }

    /// Blocks until the session is stopped, or `timeout` seconds pass. Returns whether it stopped.
    /// Stopped means what `stopRunning` waits for: threads joined, no output working on a frame.
    @discardableResult
    public func waitUntilStopped(timeout: Double = .infinity) -> Bool {
        let deadline = Date(timeIntervalSinceNow: min(timeout, 1e9))
        stateChanged.lock()
        defer { stateChanged.unlock() }
        while runState != .stopped {
            if !stateChanged.wait(until: deadline) { return runState == .stopped }
        }
        return true
    }

    /// A new stream of this session's events, from now on. Ends when the consumer stops
    /// iterating. (Iterating needs a free thread of Swift's cooperative pool; code that blocks
    /// those threads should use `observeEvents(on:_:)` instead.)
    public func events() -> AsyncStream<Event> {
        let (stream, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingNewest(256))
        let id = addSubscriber { continuation.yield($0) }
        continuation.onTermination = { [weak self] _ in self?.removeSubscriber(id) }
        return stream
    }

    /// Calls `handler` on `queue` for each event from now on, until the returned observation is
    /// cancelled or released (the NotificationCenter-style alternative to `events()`).
    public func observeEvents(on queue: DispatchQueue, _ handler: @escaping @Sendable (Event) -> Void) -> EventObservation {
        let id = addSubscriber { event in queue.async { handler(event) } }
        return EventObservation { [weak self] in self?.removeSubscriber(id) }
    }

    /// Keeps an `observeEvents` registration alive; cancelling or releasing it ends it.
    public final class EventObservation: Sendable {
        private let onCancel: Mutex<(@Sendable () -> Void)?>
        init(onCancel: @escaping @Sendable () -> Void) { self.onCancel = Mutex(onCancel) }
        /// Stops the deliveries.
        public func cancel() { onCancel.withLock { c in c?(); c = nil } }
        deinit { cancel() }
    }

    private func addSubscriber(_ deliver: @escaping @Sendable (Event) -> Void) -> UUID {
        let id = UUID()
        state.withLock { $0.subscribers[id] = deliver }
        return id
    }

    private func removeSubscriber(_ id: UUID) {
        _ = state.withLock { $0.subscribers.removeValue(forKey: id) }
    }

    // MARK: Internals (session queue)

    /// Runs `body` on the session queue, keeping its typed error.
    private func onSessionQueue<T>(_ body: () throws(CaptureError) -> T) throws(CaptureError) -> T {
        try sessionQueue.sync { Result { () throws(CaptureError) in try body() } }.get()
    }

    private func emit(_ event: Event) {
        for deliver in state.withLock({ Array($0.subscribers.values) }) { deliver(event) }
    }

    private func setRunState(_ new: RunState, lastError: CaptureError?) {
        stateChanged.lock()
        state.withLock {
            $0.runState = new
            if let lastError { $0.lastError = lastError }
        }
        stateChanged.broadcast()
        stateChanged.unlock()
    }

    private func handle(_ report: CaptureRunner.Report, generation: Int, input: CaptureDeviceInput) {
        guard generation == runnerGeneration, runner != nil else { return }
        switch report {
        case .ended(.reachedEnd):
            emit(.inputDidReachEnd(input.id))
            finishRunning(with: nil)
        case .ended(.failed(let error)):
            logger.error("capture failed: \(error)")
            emit(.runtimeError(error))
            finishRunning(with: error)
        case .interrupted(let error):
            // Not a runtime error: the session waits for the device, and the event carries why.
            setRunState(.interrupted, lastError: nil)
            emit(.wasInterrupted(error))
        case .interruptionEnded:
            setRunState(.running, lastError: nil)
            emit(.interruptionEnded)
        }
    }

    /// A failure after configuration that ends the run (`AVCaptureSessionRuntimeError`): the
    /// `.runtimeError` event, then the session stops, if it was running. Session queue.
    private func failAtRunTime(_ error: CaptureError, wasRunning: Bool) {
        guard wasRunning else { return }
        logger.error("session failed: \(error)")
        emit(.runtimeError(error))
        finishRunning(with: error)
    }

    private func finishRunning(with error: CaptureError?, announce: Bool = true) {
        runner?.stop()
        runner = nil
        runnerGeneration += 1
        let outputs = state.withLock { $0.outputs }
        for output in outputs { output.sessionDidStop() }
        // Before the state says stopped: `waitUntilStopped` then means no work is in progress.
        for output in outputs { output.waitForWorkInProgress() }
        if announce {
            setRunState(.stopped, lastError: error)
            emit(.didStopRunning)
        }
    }

    private func requireConfigurable(_ what: String) throws(CaptureError) {
        let (running, depth) = state.withLock { ($0.runState != .stopped, $0.configurationDepth) }
        if running && depth == 0 {
            throw CaptureError(
                .configurationRequiresBeginConfiguration,
                "cannot \(what) while the session runs: wrap the change in beginConfiguration()/commitConfiguration()")
        }
    }

    @discardableResult
    private func checkAdd(input: CaptureInput) throws(CaptureError) -> CaptureDeviceInput {
        guard let deviceInput = input as? CaptureDeviceInput else {
            throw CaptureError(.unsupported, "addInput: only CaptureDeviceInput is supported")
        }
        let s = state.withLock { $0 }
        if s.inputs.contains(where: { $0 === input }) || input.owner.withLock({ $0 != nil }) {
            throw CaptureError(.inputAlreadyAdded, "addInput: \(deviceInput.device.localizedName) is already in a session")
        }
        if !s.inputs.isEmpty {
            throw CaptureError(
                .inputLimitReached, "addInput: a session takes one video input; remove \(s.inputs[0].device.localizedName) first")
        }
        if s.preset.format(for: deviceInput.device) == nil {
            throw presetError(s.preset, deviceInput.device)
        }
        try requireConfigurable("add an input")
        return deviceInput
    }

    private func checkAdd(output: CaptureOutput) throws(CaptureError) {
        if state.withLock({ s in s.outputs.contains { $0 === output } }) || output.owner.withLock({ $0 != nil }) {
            throw CaptureError(.outputAlreadyAdded, "addOutput: the output is already in a session")
        }
        try requireConfigurable("add an output")
    }

    private func presetError(_ preset: SessionPreset, _ device: CaptureDevice) -> CaptureError {
        CaptureError(
            .presetNotSupported,
            "\(device.localizedName) cannot deliver the \(preset) preset; its formats are \(device.formats.map { $0.dimensions.description }.joined(separator: ", ")) (use .inputPriority to keep its own)")
    }

    private func resolveFormat(input: CaptureDeviceInput, preset: SessionPreset) throws(CaptureError) -> CaptureDevice.Format {
        guard let format = preset.format(for: input.device) else { throw presetError(preset, input.device) }
        return format
    }

    private func applyIfNotConfiguring() throws(CaptureError) {
        if state.withLock({ $0.configurationDepth }) == 0 { try applyConfiguration() }
    }

    /// Rebuilds connections, resolves the preset and, when running, rewires or restarts the runner.
    private func applyConfiguration() throws(CaptureError) {
        let s = state.withLock { $0 }
        let input = s.inputs.first
        for output in s.outputs {
            let existing = output.connections.filter { $0.inputID == input?.id }
            output.setConnections(existing.isEmpty ? (input.map { [CaptureConnection(inputID: $0.id, output: output)] } ?? []) : existing)
        }
        guard let input else {
            if s.runState != .stopped { finishRunning(with: nil) }  // the running input was removed
            return
        }
        let format = try resolveFormat(input: input, preset: s.preset)
        let formatChanged = format != input.device.activeFormat
        input.device.applySessionFormat(format)
        guard s.runState != .stopped, let runner else { return }
        if formatChanged || runner.inputID != input.id {
            // A new format or device needs the source reopened; the session stays "running".
            finishRunning(with: nil, announce: false)
            try startStreaming(announce: false)
        } else {
            for (output, _) in currentWiring() where !runner.wiresOutput(output) {
                if let error = output.startError() {
                    failAtRunTime(error, wasRunning: true)
                    throw error
                }
                output.sessionWillStart(format: format, input: input)
            }
            runner.setWiring(currentWiring())
        }
    }

    private func startStreaming(announce: Bool) throws(CaptureError) {
        let snapshot = state.withLock { $0 }
        guard snapshot.configurationDepth == 0 else {
            throw CaptureError(.sessionIsConfiguring, "startRunning() inside a configuration block: commit it first")
        }
        guard snapshot.runState == .stopped || !announce else {
            throw CaptureError(.sessionAlreadyRunning, "startRunning(): the session is already \(snapshot.runState.rawValue)")
        }
        guard let input = snapshot.inputs.first else {
            throw CaptureError(.sessionHasNoInputs, "startRunning(): add an input to the session first")
        }
        // An output that cannot do what it was asked (a face model that will not load) stops the
        // start before the device opens.
        for output in snapshot.outputs {
            if let error = output.startError() {
                if !announce { setRunState(.stopped, lastError: error) }
                throw error
            }
        }
        let format = try resolveFormat(input: input, preset: snapshot.preset)
        input.device.applySessionFormat(format)
        let wiring = currentWiring()
        for (output, _) in wiring { output.sessionWillStart(format: format, input: input) }
        runnerGeneration += 1
        let generation = runnerGeneration
        let runner = CaptureRunner(
            input: input, format: format, frameDuration: input.device.activeVideoMinFrameDuration, wiring: wiring,
            countFrame: { [weak self] in self?.framesCaptured.add(1, ordering: .relaxed) }
        ) { [weak self] report in
            guard let self else { return }
            self.sessionQueue.async { self.handle(report, generation: generation, input: input) }
        }
        do {
            try runner.start()
        } catch {
            if !announce { setRunState(.stopped, lastError: error) }  // a restart that failed ends the run
            throw error
        }
        self.runner = runner
        setRunState(.running, lastError: nil)
        logger.debug("session started", metadata: ["input": "\(input.device)", "format": "\(format)"])
        if announce { emit(.didStartRunning) }
    }

    private func currentWiring() -> CaptureRunner.Wiring {
        state.withLock { $0.outputs }.flatMap { output in output.connections.map { (output, $0) } }
    }
}
