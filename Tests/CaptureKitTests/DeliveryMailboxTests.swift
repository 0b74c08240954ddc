import Dispatch
import Foundation
import Testing

@testable import CaptureKit
@testable import CaptureVision

/// The mailbox between a producer and a consumer's queue, on its own.
@Suite struct DeliveryMailboxTests {
    /// A producer that waits on a full queue while the consumer drains it completely must still
    /// have its item delivered, in order (it once sat in `pending` with nobody to deliver it).
    @Test func aProducerWaitingOnAFullQueueKeepsOrderWhenTheConsumerGoesIdle() {
        for round in 0..<50 {
            let mailbox = DeliveryMailbox<Int>(capacity: 2)
            mailbox.discardsLateItems = false
            let queue = DispatchQueue(label: "consumer")
            let lock = NSLock()
            nonisolated(unsafe) var seen: [Int] = []
            let handler: @Sendable (Int) -> Void = { n in
                // A slow first item fills the queue; later ones are fast, so the consumer empties
                // the queue and goes idle while the producer is still waking up.
                if n == 0 { Thread.sleep(forTimeInterval: 0.002) }
                lock.withLock { seen.append(n) }
            }
            for n in 0..<8 {
                if case .dropped = mailbox.offer(n, canWait: true, queue: queue, handler: handler) {
                    Issue.record("round \(round): item \(n) dropped")
                }
            }
            mailbox.drain()
            #expect(lock.withLock { seen } == Array(0..<8), "round \(round)")
        }
    }
}
