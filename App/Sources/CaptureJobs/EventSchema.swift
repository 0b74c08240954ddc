import CaptureKit
import Foundation

// The `--json` NDJSON schema (version 1, documented in the README): one type per event, each
// line an `Event<Body>`. Boxes and faces are `MetadataRecord`'s, the same the photo record uses.
// Fields and types added since the first release (`wallTime`, `start`, `run`, the code `leave`)
// change no existing field's meaning, so the version stays 1.

/// The `type` of every event line.
package enum EventType: String, Codable, CaseIterable, Sendable {
    case start, face, code, motion, snapshot, recording, drop, error, summary, devices, stats
    case format, interrupted, interruptionEnded, controls
    case clip, retention

    /// Text mode prints these on stderr, like zbarimg, so stdout holds only what was found (and
    /// when a camera went and came back); NDJSON keeps every event on stdout, one stream for a
    /// program to read.
    package var isDiagnostic: Bool { [.drop, .error, .summary, .stats, .format, .retention].contains(self) }
}

/// This run's ID: 8 random hex digits, printed at the start and in the summary, so face IDs
/// (unique within a run) and files can be told apart across runs in one log.
package enum RunID {
    package static let current = String(format: "%08x", UInt32.random(in: .min ... .max))
}

/// The fields of one event type; `Event` adds `schema` and `type`.
package protocol EventBody: Codable, Equatable, Sendable {
    static var type: EventType { get }
    /// The event with `Redaction.redact` applied to every field that may quote an input's name
    /// or a library's message (never to a payload): `EventPrinter.encode` calls it for every
    /// line, NDJSON and MQTT alike. The default returns the event as it is.
    func redactingSecrets() -> Self
}

extension EventBody {
    package func redactingSecrets() -> Self { self }
}

/// One NDJSON line: `schema`, `type`, `wallTime` and the body's fields, in one flat object.
/// `wallTime` is RFC 3339 local time with milliseconds and offset (`WallTimestamp.rfc3339`):
/// for camera frames the moment the frame was taken, otherwise the moment cvcam reported it.
package struct Event<Body: EventBody>: Codable, Equatable, Sendable {
    package static var schemaVersion: Int { 1 }

    package var body: Body
    package var wallTime: String?

    package init(_ body: Body, wallTime: String? = nil) {
        self.body = body
        self.wallTime = wallTime
    }

    private enum CodingKeys: String, CodingKey { case schema, type, wallTime }

    package init(from decoder: any Decoder) throws {
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

    package func encode(to encoder: any Encoder) throws {
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
package struct StartEvent: EventBody {
    package static let type = EventType.start

    package var run: String
    package var clock: String
    package var input: SummaryEvent.Input

    /// Creates the value from each of its properties.
    package init(run: String, clock: String, input: SummaryEvent.Input) {
        self.run = run
        self.clock = clock
        self.input = input
    }

    package func redactingSecrets() -> Self { .init(run: run, clock: clock, input: input.redactingSecrets()) }
}

/// A presentation time in seconds, rounded to 4 decimals.
package func eventTime(_ time: MediaTime) -> Double { MetadataRecord.rounded(time.seconds, 4) }

/// A face: `event` (a `MetadataEvent.name`, or `frame` with --every-frame), `time`, the face's
/// record (faceID, box, score, roll, yaw, landmarks), `viewBox` with --view and `source` (the
/// file the frame came from) for file inputs.
package struct FaceEvent: EventBody {
    package static let type = EventType.face
    /// The event name --every-frame uses for each face in each frame.
    package static let everyFrame = "frame"

    package var event: String
    package var time: Double
    package var face: MetadataRecord.Face
    package var viewBox: MetadataRecord.Box?
    package var source: String?

    package init(event: String, time: Double, face: MetadataRecord.Face, viewBox: MetadataRecord.Box?, source: String? = nil) {
        self.event = event
        self.time = time
        self.face = face
        self.viewBox = viewBox
        self.source = source
    }

    private enum CodingKeys: String, CodingKey { case event, time, viewBox, source }

    package init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        event = try c.decode(String.self, forKey: .event)
        time = try c.decode(Double.self, forKey: .time)
        viewBox = try c.decodeIfPresent(MetadataRecord.Box.self, forKey: .viewBox)
        source = try c.decodeIfPresent(String.self, forKey: .source)
        face = try MetadataRecord.Face(from: decoder)
    }

    package func encode(to encoder: any Encoder) throws {
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
package struct CodeEvent: EventBody {
    package static let type = EventType.code

    package var event: String
    package var time: Double
    package var symbology: String
    package var text: String?
    package var base64: String
    package var box: MetadataRecord.Box
    package var corners: [[Double]]
    package var viewBox: MetadataRecord.Box?
    package var source: String?

    private enum CodingKeys: String, CodingKey { case event, time, symbology, text, base64, box, corners, viewBox, source }

    package func encode(to encoder: any Encoder) throws {
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

    /// Creates the value from each of its properties.
    package init(event: String, time: Double, symbology: String, text: String? = nil, base64: String, box: MetadataRecord.Box, corners: [[Double]], viewBox: MetadataRecord.Box? = nil, source: String? = nil) {
        self.event = event
        self.time = time
        self.symbology = symbology
        self.text = text
        self.base64 = base64
        self.box = box
        self.corners = corners
        self.viewBox = viewBox
        self.source = source
    }
}

extension CodeEvent {
    package init(event: String, code: MetadataMachineReadableCodeObject, viewBox: MetadataRecord.Box?, source: String? = nil) {
        self.init(
            event: event, time: eventTime(code.time), symbology: code.type.rawValue, text: code.stringValue,
            base64: Data(code.payload).base64EncodedString(), box: MetadataRecord.Box(code.bounds),
            corners: MetadataRecord.points(code.corners), viewBox: viewBox, source: source)
    }
}

/// Motion (`--motion`, `serve`): `event` (`start` with a motion's first frame; `end` once
/// nothing moved for the end delay, or the input ended, with the last frame that moved), `time`,
/// `box` (around every moving region), `regions` (each moving region's box, largest first) and
/// `changed` (the fraction of the watched area that changed, 0…1).
package struct MotionEvent: EventBody {
    package static let type = EventType.motion

    package var event: String
    package var time: Double
    package var box: MetadataRecord.Box
    package var regions: [MetadataRecord.Box]
    package var changed: Double

    /// Creates the value from each of its properties.
    package init(event: String, time: Double, box: MetadataRecord.Box, regions: [MetadataRecord.Box], changed: Double) {
        self.event = event
        self.time = time
        self.box = box
        self.regions = regions
        self.changed = changed
    }

    package init(event: String, motion: MetadataMotionObject) {
        self.init(
            event: event, time: eventTime(motion.time), box: MetadataRecord.Box(motion.bounds),
            regions: motion.regions.map { MetadataRecord.Box($0) }, changed: MetadataRecord.rounded(motion.changedFraction, 4))
    }
}

/// A photo or snapshot written: `faces` (every face in the frame) and `preFrames` only from watch.
package struct SnapshotEvent: EventBody {
    package static let type = EventType.snapshot

    package var path: String
    package var time: Double
    package var width: Int
    package var height: Int
    package var faceIDs: [Int]
    package var reason: String
    package var faces: [Int]?
    package var preFrames: Int?

    /// Creates the value from each of its properties.
    package init(path: String, time: Double, width: Int, height: Int, faceIDs: [Int], reason: String, faces: [Int]? = nil, preFrames: Int? = nil) {
        self.path = path
        self.time = time
        self.width = width
        self.height = height
        self.faceIDs = faceIDs
        self.reason = reason
        self.faces = faces
        self.preFrames = preFrames
    }
}

/// A recording started.
package struct RecordingEvent: EventBody {
    package static let type = EventType.recording

    package var path: String
    package var width: Int
    package var height: Int
    /// `cvcam serve`: recording resumed after this many failed attempts (a full disk); absent
    /// for a recording that followed the last one without trouble.
    package var resumedAfterFailures: Int?

    /// Creates the value from each of its properties.
    package init(path: String, width: Int, height: Int, resumedAfterFailures: Int? = nil) {
        self.path = path
        self.width = width
        self.height = height
        self.resumedAfterFailures = resumedAfterFailures
    }
}

/// Frames skipped: `count` since the last report, `total` in all.
package struct DropEvent: EventBody {
    package static let type = EventType.drop

    package var reason: String
    package var count: Int
    package var total: Int

    /// Creates the value from each of its properties.
    package init(reason: String, count: Int, total: Int) {
        self.reason = reason
        self.count = count
        self.total = total
    }
}

/// A runtime error: `code` (a `CaptureError.Code`, or cvcam's own) and `message`.
package struct ErrorEvent: EventBody {
    package static let type = EventType.error

    package var code: String
    package var message: String

    package init(code: String, message: String) {
        self.code = code
        self.message = message
    }

    package init(_ error: CaptureError) { self.init(code: error.code.rawValue, message: error.message) }

    package func redactingSecrets() -> Self { .init(code: code, message: Redaction.redact(message)) }
}

/// The last line of a capturing command. The common fields come first; each command sets its own.
package struct SummaryEvent: EventBody {
    package static let type = EventType.summary

    /// What was read.
    package struct Input: Codable, Equatable, Sendable {
        package var kind: String
        package var name: String
        package var size: String
        /// A camera's negotiated format ("MJPG 1280x720@30") and whether the driver adjusted it.
        package var format: String?
        package var adjusted: Bool?
        /// A network camera's frame rate: as the stream reports it, or as measured (MJPEG over HTTP).
        package var frameRate: Double?

        /// Creates the value from each of its properties.
        package init(kind: String, name: String, size: String, format: String? = nil, adjusted: Bool? = nil, frameRate: Double? = nil) {
            self.kind = kind
            self.name = name
            self.size = size
            self.format = format
            self.adjusted = adjusted
            self.frameRate = frameRate
        }

        /// `name` through `Redaction.redact` (a network camera's or a file's URL).
        package func redactingSecrets() -> Self {
            var copy = self
            copy.name = Redaction.redact(name)
            return copy
        }
    }

    package var frames: Int
    package var analysed: Int
    package var skipped: Int
    package var seconds: Double
    package var fps: Double
    package var input: Input
    /// The run's ID (as in the `start` line).
    package var run: String = RunID.current
    /// Several inputs in one run: how many were given, and how many failed.
    package var inputs: Int?
    package var failedInputs: Int?
    /// faces: faces seen.
    package var faces: Int?
    /// scan: codes read.
    package var codes: Int?
    /// snap: photos written.
    package var photos: Int?
    /// watch: snapshots written, and where; event clips written (with --clips).
    package var snapshots: Int?
    package var dir: String?
    package var clips: Int?
    /// record: the file, what it holds, and why the recording ended.
    package var path: String?
    package var recordedFrames: Int?
    package var bytes: Int64?
    package var ended: String?

    package init(frames: Int, analysed: Int, skipped: Int, seconds: Double, input: Input) {
        self.frames = frames
        self.analysed = analysed
        self.skipped = skipped
        self.seconds = MetadataRecord.rounded(seconds, 3)
        fps = MetadataRecord.rounded(seconds > 0 ? Double(analysed) / seconds : 0, 1)
        self.input = input
    }

    package func redactingSecrets() -> Self {
        var copy = self
        copy.input = input.redactingSecrets()
        copy.path = path.map(Redaction.redact)
        copy.dir = dir.map(Redaction.redact)
        copy.ended = ended.map(Redaction.redact)
        return copy
    }
}

/// Every --stats-interval seconds: `frames` captured and `analysed` so far, `skipped` (frames
/// analysis or the output had no time for), `fps` analysed over the interval, `detectionMs`
/// (time to analyse one frame, p50 and p99 over the interval; absent when none was analysed or
/// the command analyses nothing), `cpu` (process CPU time over the interval, percent of one
/// core), `rssBytes` (resident memory) and `seconds` since the start.
package struct StatsEvent: EventBody {
    package static let type = EventType.stats

    package struct Percentiles: Codable, Equatable, Sendable {
        package var p50: Double
        package var p99: Double

        /// Creates the value from each of its properties.
        package init(p50: Double, p99: Double) {
            self.p50 = p50
            self.p99 = p99
        }
    }

    package var frames: Int
    package var analysed: Int
    package var skipped: Int
    package var fps: Double
    package var detectionMs: Percentiles?
    package var cpu: Double
    package var rssBytes: Int
    package var seconds: Double

    /// Creates the value from each of its properties.
    package init(frames: Int, analysed: Int, skipped: Int, fps: Double, detectionMs: Percentiles? = nil, cpu: Double, rssBytes: Int, seconds: Double) {
        self.frames = frames
        self.analysed = analysed
        self.skipped = skipped
        self.fps = fps
        self.detectionMs = detectionMs
        self.cpu = cpu
        self.rssBytes = rssBytes
        self.seconds = seconds
    }
}

/// `cvcam devices --json`: every camera, with its V4L2 report when it could be read.
package struct DevicesEvent: EventBody {
    package static let type = EventType.devices

    package struct Device: Codable, Equatable, Sendable {
        package var index: Int
        package var name: String
        package var uniqueID: String
        package var position: String
        package var v4l2: V4L2DeviceReport?

        /// Creates the value from each of its properties.
        package init(index: Int, name: String, uniqueID: String, position: String, v4l2: V4L2DeviceReport? = nil) {
            self.index = index
            self.name = name
            self.uniqueID = uniqueID
            self.position = position
            self.v4l2 = v4l2
        }
    }

    package var devices: [Device]

    /// Creates the value from each of its properties.
    package init(devices: [Device]) {
        self.devices = devices
    }
}

/// A camera's negotiated format, when streaming starts: what the driver granted, and what was
/// asked for when the driver changed it (`adjusted`).
package struct FormatEvent: EventBody {
    package static let type = EventType.format

    package var device: String
    package var fourCC: String
    package var width: Int
    package var height: Int
    package var fps: Double
    package var adjusted: Bool
    package var requested: String?

    /// Creates the value from each of its properties.
    package init(device: String, fourCC: String, width: Int, height: Int, fps: Double, adjusted: Bool, requested: String? = nil) {
        self.device = device
        self.fourCC = fourCC
        self.width = width
        self.height = height
        self.fps = fps
        self.adjusted = adjusted
        self.requested = requested
    }
}

/// The camera went away (unplugged); the session waits for it.
package struct InterruptedEvent: EventBody {
    package static let type = EventType.interrupted

    package var code: String
    package var message: String

    /// Creates the value from each of its properties.
    package init(code: String, message: String) {
        self.code = code
        self.message = message
    }

    package func redactingSecrets() -> Self { .init(code: code, message: Redaction.redact(message)) }
}

/// The camera came back and frames flow again.
package struct InterruptionEndedEvent: EventBody {
    package static let type = EventType.interruptionEnded
}

/// `cvcam controls --json`: one camera's controls, each with its v4l2-ctl name (`v4l2Name`).
package struct ControlsEvent: EventBody {
    package static let type = EventType.controls

    package var device: String
    package var name: String
    package var controls: [CaptureDevice.ControlDescription]

    /// Creates the value from each of its properties.
    package init(device: String, name: String, controls: [CaptureDevice.ControlDescription]) {
        self.device = device
        self.name = name
        self.controls = controls
    }
}
