import Dispatch
import Foundation

/// Hands items from a producer thread to a consumer's serial queue (or worker thread) without
/// ever letting a slow consumer stall the producer (unless the producer asks to wait).
///
/// - Discarding (`discardsLateItems`): at most one item waits; a newer one replaces it and the
///   replaced item is returned to the caller as dropped (`frameWasLate`).
/// - Not discarding: up to `capacity` items wait in order. When full, a producer that may wait
///   blocks until there is room; one that may not gets the item back as dropped (`outOfBuffers`).
///
/// Items are handled one at a time, in order, on `queue`.
///
/// `cancelPending` takes back every item not yet being handled, including the one whose job is
/// already on the queue but has not started (that job then does nothing); `waitForHandler` waits
/// for the item being handled, if any. Together they let a stopping session return only once no
/// item is being worked on, without waiting for a queue the caller may itself be blocking.
///
/// Threading: `offer`, `drain`, `cancelPending` and `waitForHandler` from any thread.
final class DeliveryMailbox<Item: Sendable>: @unchecked Sendable {
    // @unchecked: all mutable state is guarded by `condition`.

    private let condition = NSCondition()
    private var pending: [Item] = []
    private var busy = false
    private var cancelled = false
    /// The item whose job is on the queue and has not started yet.
    private var scheduled: Item?
    /// Set by `cancelPending` when it took `scheduled` back: its job must not handle it.
    private var skipScheduled = false
    /// The thread handling an item right now.
    private var handlerThread: pthread_t?

    var discardsLateItems: Bool {
        get { condition.withLock { _discards } }
        set { condition.withLock { _discards = newValue } }
    }
    private var _discards = true
    let capacity: Int

    init(capacity: Int = 16) {
        self.capacity = capacity
    }

    enum Outcome {
        case accepted
        case dropped(Item, FrameDropReason)
    }

    /// Offers an item. `handler` runs on `queue` for it (or for whichever item follows).
    func offer(
        _ item: Item, canWait: Bool, queue: any SerialJobRunner, handler: @escaping @Sendable (Item) -> Void
    ) -> Outcome {
        condition.lock()
        defer { condition.unlock() }
        cancelled = false
        if !busy {
            busy = true
            schedule(item, queue: queue, handler: handler)
            return .accepted
        }
        if _discards {
            let replaced = pending.popLast()
            pending = [item]
            return replaced.map { .dropped($0, .frameWasLate) } ?? .accepted
        }
        while pending.count >= capacity && canWait && !cancelled {
            condition.wait()
        }
        if pending.count >= capacity || cancelled {
            return .dropped(item, .outOfBuffers)
        }
        if !busy {
            // The consumer emptied the queue and went idle while we waited: nobody would pick
            // this item up from `pending` (it would be delivered late, out of order, or lost).
            busy = true
            schedule(item, queue: queue, handler: handler)
            return .accepted
        }
        pending.append(item)
        return .accepted
    }

    /// Puts `item`'s job on the queue. Call with `condition` locked.
    private func schedule(_ item: Item, queue: any SerialJobRunner, handler: @escaping @Sendable (Item) -> Void) {
        scheduled = item
        skipScheduled = false
        queue.run { [self] in
            condition.lock()
            scheduled = nil
            let skip = skipScheduled
            skipScheduled = false
            if !skip { handlerThread = pthread_self() }
            condition.unlock()
            if !skip { handler(item) }
            condition.lock()
            defer { condition.unlock() }
            handlerThread = nil
            condition.broadcast()
            if pending.isEmpty {
                busy = false
                return
            }
            schedule(pending.removeFirst(), queue: queue, handler: handler)
        }
    }

    /// Blocks until every accepted item has been handled.
    func drain() {
        condition.lock()
        while busy { condition.wait() }
        condition.unlock()
    }

    /// Forgets waiting items (they are not handled), the one whose job has not started
    /// included, and releases a blocked producer. Returns the forgotten items.
    @discardableResult
    func cancelPending() -> [Item] {
        condition.lock()
        var dropped = pending
        if let scheduled, !skipScheduled {
            dropped.insert(scheduled, at: 0)
            skipScheduled = true
        }
        pending = []
        cancelled = true
        condition.broadcast()
        condition.unlock()
        return dropped
    }

    /// Blocks while an item is being handled on another thread (from the handler itself it
    /// returns at once: it would wait for itself).
    func waitForHandler() {
        condition.lock()
        while let thread = handlerThread, pthread_equal(thread, pthread_self()) == 0 { condition.wait() }
        condition.unlock()
    }
}

extension NSCondition {
    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        lock()
        defer { unlock() }
        return try body()
    }
}
