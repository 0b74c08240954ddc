import CaptureKit
import Foundation

// The `--json` NDJSON schema (version 1, documented in the README): one type per event, each
// line an `Event<Body>`. Boxes and faces are `MetadataRecord`'s, the same the photo record uses.
// Fields and types added since the first release (`wallTime`, `start`, `run`, the code `leave`)
// change no existing field's meaning, so the version stays 1.

/// The `type` of every event line.
enum EventType: String, Codable, CaseIterable, Sendable {
    case start, face, code, snapshot, recording, drop, error, summary, devices, stats
    case format, interrupted, interruptionEnded, controls

    /// Text mode prints these on stderr, like zbarimg, so stdout holds only what was found (and
    /// when a camera went and came back); NDJSON keeps every event on stdout, one stream for a
    /// program to read.
    var isDiagnostic: Bool { [.drop, .error, .summary, .stats, .format].contains(self) }
}

/// This run's ID: 8 random hex digits, printed at the start and in the summary, so face IDs
/// (unique within a run) and files can be told apart across runs in one log.
enum RunID {
    static let current = String(format: "%08x", UInt32.random(in: .min ... .max))
}

/// The fields of one event type; `Event` adds `schema` and `type`.
protocol EventBody: Codable, Equatable, Sendable {
    static var type: EventType { get }
}

/// One NDJSON line: `schema`, `type`, `wallTime` and the body's fields, in one flat object.
/// `wallTime` is RFC 3339 local time with milliseconds and offset (`WallTimestamp.rfc3339`):
/// for camera frames the moment the frame was taken, otherwise the moment cvcam reported it.
struct Event<Body: EventBody>: Codable, Equatable, Sendable {
    static var schemaVersion: Int { 1 }

    var body: Body
    var wallTime: String?

    init(_ body: Body, wallTime: String? = nil) {
        self.body = body
        self.wallTime = wallTime
    }

    private enum CodingKeys: String, CodingKey { case schema, type, wallTime }

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
        wallTime = try c.decodeIfPresent(String.self, forKey: .wallTime)
        body = try Body(from: decoder)
    }

    func encode(to encoder: any Encoder) throws {
        try body.encode(to: encoder)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(Self.schemaVersion, forKey: .schema)
        try c.encode(Body.type, forKey: .type)
        try c.encodeIfPresent(wallTime, forKey: .wallTime)
    }
}

/// The first line of a capturing command: the run's ID, what is read, and which clock the
/// events' `time` is on (`camera`: the camera's clock, mapped to `wallTime`; `media`: the
/// position in a file, folder or synthetic scene).
struct StartEvent: EventBody {
    static let type = EventType.start

    var run: String
    var clock: String
    var input: SummaryEvent.Input
}

/// A presentation time in seconds, rounded to 4 decimals.
func eventTime(_ time: MediaTime) -> Double { MetadataRecord.rounded(time.seconds, 4) }

/// A face: `event` (a `MetadataEvent.name`, or `frame` with --every-frame), `time`, the face's
/// record (faceID, box, score, roll, yaw, landmarks), `viewBox` with --view and `source` (the
/// file the frame came from) for file inputs.
struct FaceEvent: EventBody {
    static let type = EventType.face
    /// The event name --every-frame uses for each face in each frame.
    static let everyFrame = "frame"

    var event: String
    var time: Double
    var face: MetadataRecord.Face
    var viewBox: MetadataRecord.Box?
    var source: String?

    init(event: String, time: Double, face: MetadataRecord.Face, viewBox: MetadataRecord.Box?, source: String? = nil) {
        self.event = event
        self.time = time
        self.face = face
        self.viewBox = viewBox
        self.source = source
    }

    private enum CodingKeys: String, CodingKey { case event, time, viewBox, source }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        event = try c.decode(String.self, forKey: .event)
        time = try c.decode(Double.self, forKey: .time)
        viewBox = try c.decodeIfPresent(MetadataRecord.Box.self, forKey: .viewBox)
        source = try c.decodeIfPresent(String.self, forKey: .source)
        face = try MetadataRecord.Face(from: decoder)
    }

    func encode(to encoder: any Encoder) throws {
        // The face's fields sit beside the event's, as in schema 1.
        try face.encode(to: encoder)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(event, forKey: .event)
        try c.encode(time, forKey: .time)
        try c.encodeIfPresent(viewBox, forKey: .viewBox)
        try c.encodeIfPresent(source, forKey: .source)
    }
}

/// A code: `event` (`appear`, `repeat`, `leave`), `time`, `symbology`, `text` (null for a binary
/// payload), `base64` (the exact bytes), `box`, `corners`, `viewBox` with --view, `source` for
/// file inputs.
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
    var source: String?

    private enum CodingKeys: String, CodingKey { case event, time, symbology, text, base64, box, corners, viewBox, source }

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
        try c.encodeIfPresent(source, forKey: .source)
    }
}

extension CodeEvent {
    init(event: String, code: MetadataMachineReadableCodeObject, viewBox: MetadataRecord.Box?, source: String? = nil) {
        self.init(
            event: event, time: eventTime(code.time), symbology: code.type.rawValue, text: code.stringValue,
            base64: Data(code.payload).base64EncodedString(), box: MetadataRecord.Box(code.bounds),
            corners: MetadataRecord.points(code.corners), viewBox: viewBox, source: source)
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
        /// A camera's negotiated format ("MJPG 1280x720@30") and whether the driver adjusted it.
        var format: String?
        var adjusted: Bool?
        /// A network camera's frame rate: as the stream reports it, or as measured (MJPEG over HTTP).
        var frameRate: Double?
    }

    var frames: Int
    var analysed: Int
    var skipped: Int
    var seconds: Double
    var fps: Double
    var input: Input
    /// The run's ID (as in the `start` line).
    var run: String = RunID.current
    /// Several inputs in one run: how many were given, and how many failed.
    var inputs: Int?
    var failedInputs: Int?
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

/// Every --stats-interval seconds: `frames` captured and `analysed` so far, `skipped` (frames
/// analysis or the output had no time for), `fps` analysed over the interval, `detectionMs`
/// (time to analyse one frame, p50 and p99 over the interval; absent when none was analysed or
/// the command analyses nothing), `cpu` (process CPU time over the interval, percent of one
/// core), `rssBytes` (resident memory) and `seconds` since the start.
struct StatsEvent: EventBody {
    static let type = EventType.stats

    struct Percentiles: Codable, Equatable, Sendable {
        var p50: Double
        var p99: Double
    }

    var frames: Int
    var analysed: Int
    var skipped: Int
    var fps: Double
    var detectionMs: Percentiles?
    var cpu: Double
    var rssBytes: Int
    var seconds: Double
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

/// A camera's negotiated format, when streaming starts: what the driver granted, and what was
/// asked for when the driver changed it (`adjusted`).
struct FormatEvent: EventBody {
    static let type = EventType.format

    var device: String
    var fourCC: String
    var width: Int
    var height: Int
    var fps: Double
    var adjusted: Bool
    var requested: String?
}

/// The camera went away (unplugged); the session waits for it.
struct InterruptedEvent: EventBody {
    static let type = EventType.interrupted

    var code: String
    var message: String
}

/// The camera came back and frames flow again.
struct InterruptionEndedEvent: EventBody {
    static let type = EventType.interruptionEnded
}

/// `cvcam controls --json`: one camera's controls, each with its v4l2-ctl name (`v4l2Name`).
struct ControlsEvent: EventBody {
    static let type = EventType.controls

    var device: String
    var name: String
    var controls: [CaptureDevice.ControlDescription]
}
