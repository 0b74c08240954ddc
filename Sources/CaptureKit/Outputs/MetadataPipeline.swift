import Foundation

/// Runs a metadata output's stages on the frames it admits: each stage (lane) on a thread of its
/// own with a one-frame slot, and each frame's results joined, in admission order, on a delivery
/// thread.
///
/// A frame goes to every lane its job names, or to none: the stages always report on the same
/// frames, so a delivery holds every face and every code of its frame. While a lane is busy the
/// next frame waits in its slot, and the lanes work on different frames at once (a fast code
/// lane may be a frame ahead of the face lane). A frame offered while a slot is taken waits
/// (`canWait`), replaces the waiting frame when no lane has started it, or is dropped.
///
/// A job may first pass a *gate* (`Job.needsGate`; the metadata output's motion stage): one
/// thread of its own, in admission order, with a one-frame slot like a lane's, that looks at
/// the frame and decides which lanes it goes to (none: it is delivered without outputs). A
/// gated frame is never lost after the gate: when its lanes are busy and it cannot wait, it is
/// delivered without outputs and marked `wasSkipped` (so whatever the gate found in it, motion
/// events say, still reaches the delivery), and a waiting frame it replaces is delivered the same
/// way. Jobs that need no gate while the gate is idle go straight to the lanes, as without one.
///
/// Threading: `offer`, `whenIdle`, `waitUntilIdle` and `cancelPending` from any thread except the
/// pipeline's own; `gate` runs on the gate's thread, `work` on the lane's thread, `deliver` and
/// `whenIdle` jobs on the delivery thread.
final class MetadataPipeline<Lane: Hashable & Sendable, Context: Sendable, Output: Sendable>: @unchecked Sendable {
    // @unchecked: every mutable field is guarded by `condition`.

    /// What one admitted frame asks of the lanes.
    struct Job: Sendable {
        var frame: AnalysisFrame
        var lanes: Set<Lane>
        /// What the lanes and the delivery need to know about this frame (settings at admission).
        var context: Context
        /// Whether the gate decides its lanes first.
        var needsGate = false
        /// Its lanes were busy and it could not wait: delivered without outputs (gated frames only).
        var wasSkipped = false

        init(frame: AnalysisFrame, lanes: Set<Lane>, context: Context, needsGate: Bool = false) {
            self.frame = frame
            self.lanes = lanes
            self.context = context
            self.needsGate = needsGate
        }
    }

    /// What happened to an offered frame.
    enum Admission: Equatable {
        /// Sent to its lanes.
        case admitted
        /// Sent to its lanes in place of a waiting frame no lane had started (that one is skipped).
        case replacedWaiting
        /// Not analysed: the lanes were busy and the caller could not wait.
        case dropped
    }

    private let condition = NSCondition()
    private var slots: [Lane: (sequence: UInt64, job: Job)] = [:]
    private var busy: Set<Lane> = []
    private var inFlight: [(sequence: UInt64, job: Job, outputs: [Lane: Output])] = []
    private var nextSequence: UInt64 = 0
    private var idleJobs: [@Sendable () -> Void] = []
    private var workers: [Lane: WorkerThread] = [:]
    private let delivery: WorkerThread
    private let threadName: @Sendable (Lane) -> String
    private let work: @Sendable (Lane, Job) -> Output
    private let deliver: @Sendable (Job, [Lane: Output]) -> Void
    private let gate: (@Sendable (inout Job) -> Void)?
    private let gateWorker: WorkerThread?
    private var gateSlot: (job: Job, canWait: Bool)?
    /// From a job entering the gate's slot until the gate has handed the last one on.
    private var gateBusy = false

    /// `work` analyses one frame in one lane; `deliver` gets each frame's outputs, in admission
    /// order; `gate` (on a thread named `gateThreadName`) sets the lanes of jobs that need it.
    /// The delivery thread is named `name`, each lane's `threadName(lane)`; a thread starts with
    /// its first frame.
    init(
        name: String, threadName: @escaping @Sendable (Lane) -> String, gateThreadName: String = "cvcam.gate",
        gate: (@Sendable (inout Job) -> Void)? = nil, work: @escaping @Sendable (Lane, Job) -> Output,
        deliver: @escaping @Sendable (Job, [Lane: Output]) -> Void
    ) {
        delivery = WorkerThread(name: name)
        self.threadName = threadName
        self.work = work
        self.deliver = deliver
        self.gate = gate
        gateWorker = gate == nil ? nil : WorkerThread(name: gateThreadName)
    }

    /// Offers a frame to `job.lanes` (none: it is delivered with no outputs, in order), through
    /// the gate when it needs it (or when the gate is still busy with earlier frames, to keep
    /// their order); then `.replacedWaiting` means the frame waiting for the gate was skipped.
    func offer(_ job: Job, canWait: Bool) -> Admission {
        condition.lock()
        defer { condition.unlock() }
        if gate != nil, job.needsGate || gateBusy {
            while let waiting = gateSlot {
                if canWait {
                    condition.wait()
                    continue
                }
                // A frame that may wait must not be lost: the newcomer goes instead.
                if waiting.canWait { return .dropped }
                gateSlot = (job, canWait)
                return .replacedWaiting
            }
            gateSlot = (job, canWait)
            if !gateBusy {
                gateBusy = true
                gateWorker?.run { [self] in drainGate() }
            }
            return .admitted
        }
        return admitToLanes(job, canWait: canWait)
    }

    /// The lanes' admission (condition held).
    private func admitToLanes(_ job: Job, canWait: Bool) -> Admission {
        while true {
            if job.lanes.allSatisfy({ slots[$0] == nil }) {
                admit(job)
                return .admitted
            }
            if canWait {
                condition.wait()
                continue
            }
            // The waiting frame may be replaced only while every lane still has it waiting
            // (none started it), and only by a frame for the same lanes.
            if let waiting = job.lanes.first.flatMap({ slots[$0] }), waiting.job.lanes == job.lanes,
                job.lanes.allSatisfy({ slots[$0]?.sequence == waiting.sequence })
            {
                for lane in job.lanes { slots[lane] = (waiting.sequence, job) }
                if let i = inFlight.firstIndex(where: { $0.sequence == waiting.sequence }) { inFlight[i].job = job }
                return .replacedWaiting
            }
            return .dropped
        }
    }

    /// Runs `job` on the delivery thread after every frame admitted so far has been delivered.
    func whenIdle(_ job: @escaping @Sendable () -> Void) {
        condition.lock()
        defer { condition.unlock() }
        if inFlight.isEmpty && !gateBusy { delivery.run(job) } else { idleJobs.append(job) }
    }

    /// Blocks until every frame admitted so far has been analysed and delivered.
    func waitUntilIdle() {
        condition.lock()
        while !inFlight.isEmpty || gateBusy { condition.wait() }
        condition.unlock()
        delivery.waitUntilIdle()
    }

    /// `waitUntilIdle`, unless called from one of the pipeline's own threads (a stage, the gate
    /// or a delivery that stops the session), which would wait for itself.
    func waitForWorkInProgress() {
        let own = condition.withLock { [delivery] + Array(workers.values) + (gateWorker.map { [$0] } ?? []) }
        guard !own.contains(where: \.isCurrentThread) else { return }
        waitUntilIdle()
    }

    /// `waitForWorkInProgress`, then the lanes', the gate's and the delivery's threads are ended
    /// and joined (a stopped session leaves no thread; the next frame starts them again).
    func endThreads() {
        let own = condition.withLock { [delivery] + Array(workers.values) + (gateWorker.map { [$0] } ?? []) }
        guard !own.contains(where: \.isCurrentThread) else { return }
        waitUntilIdle()
        for worker in own { worker.stopAndJoin() }
    }

    /// Forgets frames waiting in every one of their lanes (no lane started them) and the frame
    /// waiting for the gate; returns how many. Frames a lane has started are finished and
    /// delivered; gated frames waiting for their lanes are delivered without outputs
    /// (`wasSkipped`), so what the gate found in them is not lost; those are not in the count
    /// (the delivery reports them).
    func cancelPending() -> Int {
        condition.lock()
        defer { condition.unlock() }
        var cancelled: Set<UInt64> = []
        var count = 0
        if gateSlot != nil {
            gateSlot = nil
            count += 1
        }
        for (i, entry) in inFlight.enumerated()
        where entry.outputs.isEmpty && !entry.job.lanes.isEmpty
            && entry.job.lanes.allSatisfy({ slots[$0]?.sequence == entry.sequence })
        {
            for lane in entry.job.lanes { slots[lane] = nil }
            if entry.job.needsGate {
                // Counted when delivered (`wasSkipped`), not here.
                inFlight[i].job.lanes = []
                inFlight[i].job.wasSkipped = true
            } else {
                cancelled.insert(entry.sequence)
                count += 1
            }
        }
        inFlight.removeAll { cancelled.contains($0.sequence) }
        deliverCompleted()
        condition.broadcast()
        return count
    }

    // MARK: Inside (condition held unless said otherwise)

    /// Runs on the gate's thread: gates the frames put in its slot, in order, until it is empty.
    private func drainGate() {
        while true {
            condition.lock()
            guard let (job, canWait) = gateSlot else {
                gateBusy = false
                if inFlight.isEmpty { runIdleJobs() }
                condition.broadcast()
                condition.unlock()
                return
            }
            gateSlot = nil
            condition.broadcast()
            condition.unlock()

            var gated = job
            gated.needsGate = true
            gate?(&gated)

            condition.lock()
            admitGated(gated, canWait: canWait)
            condition.unlock()
        }
    }

    /// A gated frame's admission: as `admitToLanes`, but a frame that cannot have its lanes is
    /// delivered without outputs, and so is a waiting frame it replaces.
    private func admitGated(_ job: Job, canWait: Bool) {
        var job = job
        while !job.lanes.allSatisfy({ slots[$0] == nil }) {
            if canWait {
                condition.wait()
                continue
            }
            if let waiting = job.lanes.first.flatMap({ slots[$0] }), waiting.job.lanes == job.lanes,
                job.lanes.allSatisfy({ slots[$0]?.sequence == waiting.sequence })
            {
                for lane in job.lanes { slots[lane] = nil }
                if let i = inFlight.firstIndex(where: { $0.sequence == waiting.sequence }) {
                    inFlight[i].job.lanes = []
                    inFlight[i].job.wasSkipped = true
                }
                deliverCompleted()
            } else {
                job.lanes = []
                job.wasSkipped = true
            }
        }
        admit(job)
    }

    private func admit(_ job: Job) {
        let sequence = nextSequence
        nextSequence += 1
        inFlight.append((sequence, job, [:]))
        for lane in job.lanes {
            slots[lane] = (sequence, job)
            if !busy.contains(lane) {
                busy.insert(lane)
                let worker = workers[lane] ?? WorkerThread(name: threadName(lane))
                workers[lane] = worker
                worker.run { [self] in drainLane(lane) }
            }
        }
        if job.lanes.isEmpty { deliverCompleted() }
    }

    /// Runs on the lane's thread: analyses the frames put in its slot until it is empty.
    private func drainLane(_ lane: Lane) {
        while true {
            condition.lock()
            guard let (sequence, job) = slots[lane] else {
                busy.remove(lane)
                condition.unlock()
                return
            }
            slots[lane] = nil
            condition.broadcast()
            condition.unlock()

            let output = work(lane, job)

            condition.lock()
            if let i = inFlight.firstIndex(where: { $0.sequence == sequence }) { inFlight[i].outputs[lane] = output }
            deliverCompleted()
            condition.unlock()
        }
    }

    /// Hands the frames at the head of the line whose lanes have all reported to the delivery
    /// thread, in order (enqueued under the lock, so two lanes cannot reorder them).
    private func deliverCompleted() {
        while let head = inFlight.first, head.outputs.count == head.job.lanes.count {
            inFlight.removeFirst()
            let deliver = self.deliver
            delivery.run { deliver(head.job, head.outputs) }
        }
        if inFlight.isEmpty {
            if !gateBusy { runIdleJobs() }
            condition.broadcast()
        }
    }

    private func runIdleJobs() {
        for job in idleJobs { delivery.run(job) }
        idleJobs = []
    }
}
