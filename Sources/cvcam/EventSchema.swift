import CaptureKit
import Foundation

// The `--json` NDJSON schema (version 1, documented in the README): one type per event, each
// line an `Event<Body>`. Boxes and faces are `MetadataRecord`'s, the same the photo record uses.

/// The `type` of every event line.
enum EventType: String, Codable, CaseIterable, Sendable {
    case face, code, snapshot, recording, drop, error, summary, devices
}

/// The fields of one event type; `Event` adds `schema` and `type`.
protocol EventBody: Codable, Equatable, Sendable {
    static var type: EventType { get }
}

/// One NDJSON line: `schema`, `type` and the body's fields, in one flat object.
struct Event<Body: EventBody>: Codable, Equatable, Sendable {
    static var schemaVersion: Int { 1 }

    var body: Body

    init(_ body: Body) { self.body = body }

    private enum CodingKeys: String, CodingKey { case schema, type }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let schema = try c.decode(Int.self, forKey: .schema)
        guard schema == Self.schemaVersion else {
            throw DecodingError.dataCorruptedError(forKey: .schema, in: c, debugDescription: "schema \(schema), expected 1")
        }
        let type = try c.decode(EventType.self, forKey: .type)
        guard type == Body.type else {
            throw DecodingError.dataCorruptedError(forKey: .type, in: c, debugDescription: "type \(type), expected \(Body.type)")
        }
        body = try Body(from: decoder)
    }

    func encode(to encoder: any Encoder) throws {
        try body.encode(to: encoder)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(Self.schemaVersion, forKey: .schema)
        try c.encode(Body.type, forKey: .type)
    }
}

/// A presentation time in seconds, rounded to 4 decimals.
func eventTime(_ time: MediaTime) -> Double { MetadataRecord.rounded(time.seconds, 4) }

/// A face: `event` (a `MetadataEvent.name`, or `frame` with --every-frame), `time`, the face's
/// record (faceID, box, score, roll, yaw, landmarks) and `viewBox` with --view.
struct FaceEvent: EventBody {
    static let type = EventType.face
    /// The event name --every-frame uses for each face in each frame.
    static let everyFrame = "frame"

    var event: String
    var time: Double
    var face: MetadataRecord.Face
    var viewBox: MetadataRecord.Box?

    init(event: String, time: Double, face: MetadataRecord.Face, viewBox: MetadataRecord.Box?) {
        self.event = event
        self.time = time
        self.face = face
        self.viewBox = viewBox
    }

    private enum CodingKeys: String, CodingKey { case event, time, viewBox }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        event = try c.decode(String.self, forKey: .event)
        time = try c.decode(Double.self, forKey: .time)
        viewBox = try c.decodeIfPresent(MetadataRecord.Box.self, forKey: .viewBox)
        face = try MetadataRecord.Face(from: decoder)
    }

    func encode(to encoder: any Encoder) throws {
        // The face's fields sit beside the event's, as in schema 1.
        try face.encode(to: encoder)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(event, forKey: .event)
        try c.encode(time, forKey: .time)
        try c.encodeIfPresent(viewBox, forKey: .viewBox)
    }
}

/// A code: `event` (`appear`, `repeat`), `time`, `symbology`, `text` (null for a binary
/// payload), `base64` (the exact bytes), `box`, `corners`, `viewBox` with --view.
struct CodeEvent: EventBody {
    static let type = EventType.code

    var event: String
    var time: Double
    var symbology: String
    var text: String?
    var base64: String
    var box: MetadataRecord.Box
    var corners: [[Double]]
    var viewBox: MetadataRecord.Box?

    private enum CodingKeys: String, CodingKey { case event, time, symbology, text, base64, box, corners, viewBox }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(event, forKey: .event)
        try c.encode(time, forKey: .time)
        try c.encode(symbology, forKey: .symbology)
        // `text` is always present: null says "not text", unlike a missing key.
        try c.encode(text, forKey: .text)
        try c.encode(base64, forKey: .base64)
        try c.encode(box, forKey: .box)
        try c.encode(corners, forKey: .corners)
        try c.encodeIfPresent(viewBox, forKey: .viewBox)
    }
}

extension CodeEvent {
    init(event: String, code: MetadataMachineReadableCodeObject, viewBox: MetadataRecord.Box?) {
        self.init(
            event: event, time: eventTime(code.time), symbology: code.type.rawValue, text: code.stringValue,
            base64: Data(code.payload).base64EncodedString(), box: MetadataRecord.Box(code.bounds),
            corners: MetadataRecord.points(code.corners), viewBox: viewBox)
    }
}

/// A photo or snapshot written: `faces` (every face in the frame) and `preFrames` only from watch.
struct SnapshotEvent: EventBody {
    static let type = EventType.snapshot

    var path: String
    var time: Double
    var width: Int
    var height: Int
    var faceIDs: [Int]
    var reason: String
    var faces: [Int]?
    var preFrames: Int?
}

/// A recording started.
struct RecordingEvent: EventBody {
    static let type = EventType.recording

    var path: String
    var width: Int
    var height: Int
}

/// Frames skipped: `count` since the last report, `total` in all.
struct DropEvent: EventBody {
    static let type = EventType.drop

    var reason: String
    var count: Int
    var total: Int
}

/// A runtime error: `code` (a `CaptureError.Code`, or cvcam's own) and `message`.
struct ErrorEvent: EventBody {
    static let type = EventType.error

    var code: String
    var message: String

    init(code: String, message: String) {
        self.code = code
        self.message = message
    }

    init(_ error: CaptureError) { self.init(code: error.code.rawValue, message: error.message) }
}

/// The last line of a capturing command. The common fields come first; each command sets its own.
struct SummaryEvent: EventBody {
    static let type = EventType.summary

    /// What was read.
    struct Input: Codable, Equatable, Sendable {
        var kind: String
        var name: String
        var size: String
        /// A network camera's frame rate: as the stream reports it, or as measured (MJPEG over HTTP).
        var frameRate: Double?
    }

    var frames: Int
    var analysed: Int
    var skipped: Int
    var seconds: Double
    var fps: Double
    var input: Input
    /// faces: faces seen.
    var faces: Int?
    /// scan: codes read.
    var codes: Int?
    /// snap: photos written.
    var photos: Int?
    /// watch: snapshots written, and where.
    var snapshots: Int?
    var dir: String?
    /// record: the file, what it holds, and why the recording ended.
    var path: String?
    var recordedFrames: Int?
    var bytes: Int64?
    var ended: String?

    init(frames: Int, analysed: Int, skipped: Int, seconds: Double, input: Input) {
        self.frames = frames
        self.analysed = analysed
        self.skipped = skipped
        self.seconds = MetadataRecord.rounded(seconds, 3)
        fps = MetadataRecord.rounded(seconds > 0 ? Double(analysed) / seconds : 0, 1)
        self.input = input
    }
}

/// `cvcam devices --json`: every camera, with its V4L2 report when it could be read.
struct DevicesEvent: EventBody {
    static let type = EventType.devices

    struct Device: Codable, Equatable, Sendable {
        var index: Int
        var name: String
        var uniqueID: String
        var position: String
        var v4l2: V4L2DeviceReport?
    }

    var devices: [Device]
}
