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
/// Threading: `offer`, `drain` and `cancelPending` from any thread.
final class DeliveryMailbox<Item: Sendable>: @unchecked Sendable {
    // @unchecked: all mutable state is guarded by `condition`.

    private let condition = NSCondition()
    private var pending: [Item] = []
    private var busy = false
    private var cancelled = false

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

    private func schedule(_ item: Item, queue: any SerialJobRunner, handler: @escaping @Sendable (Item) -> Void) {
        queue.run { [self] in
            handler(item)
            condition.lock()
            if pending.isEmpty {
                busy = false
                condition.broadcast()
                condition.unlock()
                return
            }
            let next = pending.removeFirst()
            condition.broadcast()
            condition.unlock()
            schedule(next, queue: queue, handler: handler)
        }
    }

    /// Blocks until every accepted item has been handled.
    func drain() {
        condition.lock()
        while busy { condition.wait() }
        condition.unlock()
    }

    /// Forgets waiting items (they are not handled) and releases a blocked producer.
    /// Returns the forgotten items.
    @discardableResult
    func cancelPending() -> [Item] {
        condition.lock()
        let dropped = pending
        pending = []
        cancelled = true
        condition.broadcast()
        condition.unlock()
        return dropped
    }
}

extension NSCondition {
    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        lock()
        defer { unlock() }
        return try body()
    }
}
