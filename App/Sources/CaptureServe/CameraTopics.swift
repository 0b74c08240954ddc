import CaptureJobs
import CaptureKit
import CapturePreview
import Foundation

/// Where the daemon publishes (`ServePublisher`): the MQTT client, or a test's recorder.
///
/// Threading: thread-safe; `publish` never blocks on the network.
package protocol ServePublisher: Sendable {
    /// `latestOnly`: state (retained): a queued older value of the topic may be replaced.
    func publish(topic: String, payload: [UInt8], retain: Bool, latestOnly: Bool)
}

extension ServePublisher {
    package func publish(topic: String, text: String, retain: Bool = false, latestOnly: Bool = false) {
        publish(topic: topic, payload: Array(text.utf8), retain: retain, latestOnly: latestOnly)
    }
}

/// The topics of the daemon and of one camera (README "Many cameras" has the table).
///
/// Value type; thread-safe.
package struct CameraTopics: Equatable, Sendable {
    package let prefix: String
    package let camera: String

    /// Every face, code, snapshot and camera event, as `--json` prints them (QoS 1, in order).
    package var events: String { "\(prefix)/\(camera)/events" }
    /// Retained: `{"count":…,"faceIDs":[…]}` of the faces in view now.
    package var faces: String { "\(prefix)/\(camera)/faces" }
    /// Retained: the last code read (its `appear` event).
    package var code: String { "\(prefix)/\(camera)/code" }
    /// Retained: `ON` while something moves (from a `motion` `start` event to its `end`), else
    /// `OFF`, as Frigate's `<camera>/motion`.
    package var motion: String { "\(prefix)/\(camera)/motion" }
    /// Retained: the latest snapshot's JPEG bytes.
    package var snapshot: String { "\(prefix)/\(camera)/snapshot" }
    /// Retained: `online` or `offline`.
    package var availability: String { "\(prefix)/\(camera)/availability" }
    /// A `stats` event every `stats` seconds.
    package var stats: String { "\(prefix)/\(camera)/stats" }
    /// Commands in: `snapshot`, `detect on|off`, `roi x,y,w,h`.
    package var set: String { "\(prefix)/\(camera)/set" }
    /// Answers to commands that could not be carried out (an `error` event).
    package var error: String { "\(prefix)/\(camera)/error" }

    /// Retained: the daemon's `online`, or `offline` (also its MQTT last will).
    package static func daemonAvailability(prefix: String) -> String { "\(prefix)/availability" }

    package static let motionOn = "ON"
    package static let motionOff = "OFF"
    package static let online = "online"
    package static let offline = "offline"

    /// Creates the value from each of its properties.
    package init(prefix: String, camera: String) {
        self.prefix = prefix
        self.camera = camera
    }
}

/// The retained `faces` state: how many faces are in view and which.
package struct FacesState: Codable, Equatable, Sendable {
    package var schema = 1
    package var count: Int
    package var faceIDs: [Int]
    package var wallTime: String

    package init(faceIDs: Set<Int>, wall: Date = Date()) {
        self.faceIDs = faceIDs.sorted()
        count = faceIDs.count
        wallTime = LocalTimestamp(wall).rfc3339
    }

    package var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}

/// The retained `code` state: the last code's `appear` event, and `state`, its text (its base64
/// when the payload is not text) cut to the 255 characters a Home Assistant state may hold
/// (`HomeAssistantDiscovery.stateText`). The whole text stays in `text`.
package struct CodeState: EventBody {
    package static let type = EventType.code

    package var code: CodeEvent
    package var state: String

    package init(_ code: CodeEvent) {
        self.code = code
        state = HomeAssistantDiscovery.stateText(code.text ?? code.base64)
    }

    private enum CodingKeys: String, CodingKey { case state }

    package init(from decoder: any Decoder) throws {
        code = try CodeEvent(from: decoder)
        state = try decoder.container(keyedBy: CodingKeys.self).decode(String.self, forKey: .state)
    }

    package func encode(to encoder: any Encoder) throws {
        try code.encode(to: encoder)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(state, forKey: .state)
    }

    /// The retained message for the `appear` event `code` whose line is `line`: the same
    /// `wallTime`, and `state` added.
    package static func line(_ code: CodeEvent, eventLine line: String) -> String {
        let object = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        let wallTime = object?["wallTime"] as? String ?? LocalTimestamp(Date()).rfc3339
        return EventPrinter.encode(CodeState(code), wallTime: wallTime)
    }
}
