/// The per-frame decisions of photo captures, with no session, device or lock: which pending
/// capture takes a frame, when the flash fires and when its light has arrived, how an exposure
/// bracket steps its bias and skips the frames still exposed at the old one, and which captures
/// fail. Kept apart so these rules can be tested with scripted frames; `CapturePhotoOutput` owns
/// one behind its lock, carries out the actions (device controls, delivery) and reports what the
/// device did.
///
/// One frame: `step` returns actions in the order to carry them out. Two of them ask the device
/// for something and need an answer before the next frame:
///
///     .fireFlash          → flashFired(at:)          or flashFailed(_:stillFormat:)
///     .setBias(b, for: c) → biasSet(for:lateFrames:) or biasFailed(for:_:)
///
/// A capture goes: waiting (for a frame of its format; with flash, for one lit by it) → started
/// (`.announce`, its first frame) → for brackets, bias requested → waiting for the first frame at
/// that bias (`.take`), and again per bracket → `.complete`; or `.fail` from any state.
///
/// Threading: a value type; its owner serialises access.
struct PhotoCaptureMachine: Sendable {
    /// Identifies a capture (`CapturePhotoSettings.uniqueID`).
    typealias ID = Int64

    /// One pending capture, as far as frame decisions go.
    struct Capture: Sendable, Equatable {
        let id: ID
        /// The format the camera switches to for it; nil: frames of the session's active format.
        let stillFormat: CaptureDevice.Format?
        /// Exposure biases in EV, one photo each; empty for a single shot.
        let brackets: [Float]
        let wantsFlash: Bool
        /// Whether its first frame has been taken (`.announce` was returned).
        fileprivate(set) var isStarted = false
        fileprivate var nextBracket = 0
        fileprivate var bias = BiasState.idle

        init(id: ID, stillFormat: CaptureDevice.Format? = nil, brackets: [Float] = [], wantsFlash: Bool = false) {
            self.id = id
            self.stillFormat = stillFormat
            self.brackets = brackets
            self.wantsFlash = wantsFlash
        }
    }

    fileprivate enum BiasState: Sendable, Equatable {
        /// The next bracket's bias is not asked for yet.
        case idle
        /// `.setBias` was returned on the frame with this sequence number; no answer yet.
        case requested(onSequence: UInt64)
        /// The bias is set; frames before this sequence number were exposed at the old one.
        case waiting(untilSequence: UInt64)
    }

    /// What the machine needs to know about a frame.
    struct Frame: Sendable {
        /// When its exposure started, on the clock of `flashFired(at:)` (`CLOCK_MONOTONIC` for V4L2).
        var time: MediaTime
        /// The source's frame counter.
        var sequence: UInt64
        /// The still format it was streamed in; nil for frames of the active format.
        var stillFormat: CaptureDevice.Format?
    }

    /// What the owner does, in order.
    enum Action: Sendable, Equatable {
        /// Fire the flash, then report `flashFired(at:)` or `flashFailed(_:stillFormat:)`.
        case fireFlash
        /// Tell the capture's delegate the shutter moment (`willCapturePhotoFor`).
        case announce(ID)
        /// This frame is one of the capture's photos, taken at `bias` (nil: no bracket).
        case take(ID, bias: Float?)
        /// Set the exposure bias, then report `biasSet(for:lateFrames:)` or `biasFailed(for:_:)`.
        case setBias(Float, for: ID)
        /// Put the exposure bias back to 0 (a bracket is done); failures do not matter.
        case resetBias
        /// Every frame of the capture is taken; it is no longer pending.
        case complete(ID)
        /// The capture failed; it is no longer pending.
        case fail(ID, CaptureError)
    }

    private struct FlashWait: Sendable {
        var firedAt: MediaTime
        var framesWaited = 0
    }

    /// Pending captures, oldest first.
    private(set) var captures: [Capture] = []
    private var flash: FlashWait?
    private var stillFramesSeen = 0
    /// Frames thrown away after a switch to a still format, while auto exposure settles.
    let settleFrameCount: Int

    init(settleFrameCount: Int) {
        self.settleFrameCount = settleFrameCount
    }

    /// Queues a capture.
    mutating func add(_ capture: Capture) {
        captures.append(capture)
    }

    /// The still format the oldest capture that needs one is waiting for.
    var requestedStillFormat: CaptureDevice.Format? {
        captures.first { $0.stillFormat != nil }?.stillFormat
    }

    /// Which device controls the captures waiting for frames of `stillFormat` need, so the owner
    /// looks them up (ioctls) only then, and outside its lock.
    func needs(stillFormat: CaptureDevice.Format?) -> (bias: Bool, flash: Bool) {
        let mine = captures.filter { $0.stillFormat == stillFormat }
        return (mine.contains { !$0.brackets.isEmpty }, mine.contains(where: \.wantsFlash))
    }

    /// Counts a frame streamed in a still format; false while it is one of the settle frames
    /// (not to be given to `step`).
    mutating func stillFrameArrived() -> Bool {
        stillFramesSeen += 1
        return stillFramesSeen > settleFrameCount
    }

    /// Whether no capture waits for `stillFormat` any more, so the camera can switch back; the
    /// settle count starts again for the next switch.
    mutating func isStillFormatDone(_ stillFormat: CaptureDevice.Format) -> Bool {
        let done = !captures.contains { $0.stillFormat == stillFormat }
        if done { stillFramesSeen = 0 }
        return done
    }

    /// Decides what to do with one frame.
    ///
    /// - Parameters:
    ///   - canSetBias: whether the device can bias exposure now (without it, brackets fail).
    ///   - canFireFlash: whether it has a flash; nil when the owner did not look because no
    ///     capture of this frame's format wanted it (a flash capture added since waits a frame).
    ///   - flashFrameLimit: frames a flash capture waits for one exposed after the flash before
    ///     it takes the next anyway (timestamps not on the flash's clock).
    mutating func step(_ frame: Frame, canSetBias: Bool, canFireFlash: Bool?, flashFrameLimit: Int) -> [Action] {
        var actions: [Action] = []
        var flashError: CaptureError?
        var lit = false
        if let canFireFlash, captures.contains(where: { $0.stillFormat == frame.stillFormat && $0.wantsFlash }) {
            if var wait = flash {
                wait.framesWaited += 1
                lit = frame.time >= wait.firedAt || wait.framesWaited > flashFrameLimit
                flash = wait
            } else if canFireFlash {
                actions.append(.fireFlash)
            } else {
                flashError = CaptureError(.unsupported, "the device lost its flash control")
            }
        }
        var keep: [Capture] = []
        for var c in captures {
            guard c.stillFormat == frame.stillFormat else {
                keep.append(c)
                continue
            }
            if c.wantsFlash {
                if let flashError {
                    actions.append(.fail(c.id, flashError))
                    continue
                }
                if !lit {
                    keep.append(c)
                    continue
                }
            }
            if !c.isStarted {
                c.isStarted = true
                actions.append(.announce(c.id))
            }
            if c.brackets.isEmpty {
                actions += [.take(c.id, bias: nil), .complete(c.id)]
                continue
            }
            guard canSetBias else {
                actions.append(.fail(c.id, CaptureError(.unsupported, "the device lost exposure control")))
                continue
            }
            if case .waiting(let until) = c.bias, frame.sequence >= until {
                actions.append(.take(c.id, bias: c.brackets[c.nextBracket]))
                c.nextBracket += 1
                c.bias = .idle
            }
            if c.nextBracket == c.brackets.count {
                actions += [.resetBias, .complete(c.id)]
                continue
            }
            if c.bias == .idle {
                actions.append(.setBias(c.brackets[c.nextBracket], for: c.id))
                c.bias = .requested(onSequence: frame.sequence)
            }
            keep.append(c)
        }
        captures = keep
        return actions
    }

    /// The flash fired at `time`, on the clock of frame times.
    mutating func flashFired(at time: MediaTime) {
        flash = FlashWait(firedAt: time)
    }

    /// The flash could not fire: every flash capture waiting for frames of `stillFormat` fails.
    mutating func flashFailed(_ error: CaptureError, stillFormat: CaptureDevice.Format?) -> [Action] {
        remove { $0.stillFormat == stillFormat && $0.wantsFlash }.map { .fail($0, error) }
    }

    /// The bias asked for `id` is set; `lateFrames` frames after the one that asked were
    /// already exposed before it (the device's frames in flight).
    mutating func biasSet(for id: ID, lateFrames: Int) {
        guard let i = captures.firstIndex(where: { $0.id == id }),
            case .requested(let sequence) = captures[i].bias
        else { return }
        captures[i].bias = .waiting(untilSequence: sequence + 1 + UInt64(max(0, lateFrames)))
    }

    /// The bias asked for `id` could not be set: the capture fails.
    mutating func biasFailed(for id: ID, _ error: CaptureError) -> [Action] {
        remove { $0.id == id }.map { .fail($0, error) }
    }

    /// Whether the owner should put the LED mode from before the flash back: the flash fired and
    /// no pending capture wants it any more, or `force` (the session stopped). Forgets the shot.
    mutating func releaseFlash(force: Bool) -> Bool {
        guard flash != nil, force || !captures.contains(where: \.wantsFlash) else { return false }
        flash = nil
        return true
    }

    /// Drops the captures waiting for `stillFormat` (the camera could not stream it) and returns
    /// them, oldest first.
    mutating func removeAll(stillFormat: CaptureDevice.Format) -> [ID] {
        stillFramesSeen = 0
        return remove { $0.stillFormat == stillFormat }
    }

    /// Drops every capture (the session stopped) and returns them, oldest first.
    mutating func removeAll() -> [ID] {
        stillFramesSeen = 0
        return remove { _ in true }
    }

    private mutating func remove(where match: (Capture) -> Bool) -> [ID] {
        let removed = captures.filter(match).map(\.id)
        captures.removeAll(where: match)
        return removed
    }
}
