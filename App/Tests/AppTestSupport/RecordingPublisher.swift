import CaptureServe
import Foundation
import Synchronization

/// What the daemon publishes, kept in order (a broker stand-in for one camera's behaviour; the
/// broker itself is tested in ServeBrokerTests).
package final class RecordingPublisher: ServePublisher {
    /// Called on the publishing thread before each message is kept (a test notes that thread).
    private let onPublish: (@Sendable (_ topic: String) -> Void)?

    package init(onPublish: (@Sendable (_ topic: String) -> Void)? = nil) { self.onPublish = onPublish }

    package struct Message: Sendable {
        package var topic: String
        package var payload: [UInt8]
        package var retain: Bool
        package var text: String { String(decoding: payload, as: UTF8.self) }
        package var json: [String: Any]? { (try? JSONSerialization.jsonObject(with: Data(payload))) as? [String: Any] }
    }

    private let store = Mutex<[Message]>([])

    package func publish(topic: String, payload: [UInt8], retain: Bool, latestOnly: Bool) {
        onPublish?(topic)
        store.withLock { $0.append(Message(topic: topic, payload: payload, retain: retain)) }
    }

    package var messages: [Message] { store.withLock { $0 } }
    package func on(_ topic: String) -> [Message] { messages.filter { $0.topic == topic } }
    /// The retained value a subscriber arriving now would get.
    package func retained(_ topic: String) -> Message? { messages.last { $0.topic == topic && $0.retain } }

    /// Waits up to `seconds` for `condition`.
    package func wait(_ seconds: Double = 15, until condition: (RecordingPublisher) -> Bool) -> Bool {
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            if condition(self) { return true }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return condition(self)
    }
}
