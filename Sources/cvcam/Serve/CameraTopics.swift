import CaptureKit
import Foundation

/// Where the daemon publishes (`ServePublisher`): the MQTT client, or a test's recorder.
///
/// Threading: thread-safe; `publish` never blocks on the network.
protocol ServePublisher: Sendable {
    /// `latestOnly`: state (retained): a queued older value of the topic may be replaced.
    func publish(topic: String, payload: [UInt8], retain: Bool, latestOnly: Bool)
}

extension ServePublisher {
    func publish(topic: String, text: String, retain: Bool = false, latestOnly: Bool = false) {
        publish(topic: topic, payload: Array(text.utf8), retain: retain, latestOnly: latestOnly)
    }
}

/// The topics of the daemon and of one camera (README "Many cameras" has the table).
///
/// Value type; thread-safe.
struct CameraTopics: Equatable, Sendable {
    let prefix: String
    let camera: String

    /// Every face, code, snapshot and camera event, as `--json` prints them (QoS 1, in order).
    var events: String { "\(prefix)/\(camera)/events" }
    /// Retained: `{"count":…,"faceIDs":[…]}` of the faces in view now.
    var faces: String { "\(prefix)/\(camera)/faces" }
    /// Retained: the last code read (its `appear` event).
    var code: String { "\(prefix)/\(camera)/code" }
    /// Retained: the latest snapshot's JPEG bytes.
    var snapshot: String { "\(prefix)/\(camera)/snapshot" }
    /// Retained: `online` or `offline`.
    var availability: String { "\(prefix)/\(camera)/availability" }
    /// A `stats` event every `stats` seconds.
    var stats: String { "\(prefix)/\(camera)/stats" }
    /// Commands in: `snapshot`, `detect on|off`, `roi x,y,w,h`.
    var set: String { "\(prefix)/\(camera)/set" }
    /// Answers to commands that could not be carried out (an `error` event).
    var error: String { "\(prefix)/\(camera)/error" }

    /// Retained: the daemon's `online`, or `offline` (also its MQTT last will).
    static func daemonAvailability(prefix: String) -> String { "\(prefix)/availability" }

    static let online = "online"
    static let offline = "offline"
}

/// The retained `faces` state: how many faces are in view and which.
struct FacesState: Codable, Equatable, Sendable {
    var schema = 1
    var count: Int
    var faceIDs: [Int]
    var wallTime: String

    init(faceIDs: Set<Int>, wall: Date = Date()) {
        self.faceIDs = faceIDs.sorted()
        count = faceIDs.count
        wallTime = LocalTimestamp(wall).rfc3339
    }

    var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}
