import CaptureKit
import Foundation
import Testing

@testable import CaptureJobs
@testable import CapturePreview
@testable import CaptureServe
@testable import CVCamCommands
import AppTestSupport

/// The typed `--json` schema: every event type encodes and decodes back to itself, and the
/// Docs/ndjson.md's examples are lines these types produce, so the documentation and the code cannot drift.
@Suite struct EventSchemaTests {
    static let input = CaptureInput.ID(rawValue: 1)

    static let face = MetadataFaceObject(
        bounds: CGRect(x: 0.123456, y: -0.00123, width: 0.25, height: 1.0 / 3), faceID: 7, hasRollAngle: true,
        rollAngle: -12.345, hasYawAngle: false, landmarks: [CGPoint(x: 0.2, y: 0.30004), CGPoint(x: 0.3, y: 0.3)],
        confidence: 0.98765, time: MediaTime(value: 1, timescale: 3), inputID: input)

    /// A binary payload (no text) with a hostile byte, and a text one with controls and bidi.
    static let codes = [
        MetadataMachineReadableCodeObject(
            type: .qr, bounds: CGRect(x: 0.1, y: 0.2, width: 0.3, height: 0.4), stringValue: nil, payload: [0, 0x9B, 0xFF],
            corners: [CGPoint(x: 0.1, y: 0.2), CGPoint(x: 0.4, y: 0.2), CGPoint(x: 0.4, y: 0.6), CGPoint(x: 0.1, y: 0.6)],
            quality: 1, time: MediaTime(value: 3, timescale: 2), inputID: input),
        MetadataMachineReadableCodeObject(
            type: .ean13, bounds: .zero, stringValue: "a\u{1B}[2J\u{202E}b/c", payload: Array("a\u{1B}[2J\u{202E}b/c".utf8),
            corners: [], quality: 1, time: .zero, inputID: input),
    ]

    /// Encodes `body` as cvcam prints it, decodes the line, and checks both directions agree.
    func roundTrip<Body: EventBody>(_ body: Body) throws -> EventType {
        let line = EventPrinter.encode(body)
        let decoded = try JSONDecoder().decode(Event<Body>.self, from: Data(line.utf8))
        #expect(decoded.body == body, "\(line)")
        #expect(decoded.wallTime.map { EventPrinter.encode(decoded.body, wallTime: $0) } == line)
        #expect(!line.contains("\n"))
        return Body.type
    }

    @Test func everyEventTypeRoundTrips() throws {
        var summary = SummaryEvent(
            frames: 40, analysed: 39, skipped: 1, seconds: 4.44567,
            input: .init(kind: "synthetic", name: "Synthetic camera 640x480", size: "640x480"))
        summary.faces = 2
        var several = summary
        several.inputs = 3
        several.failedInputs = 1
        var record = summary
        record.path = "/tmp/out.avi"
        record.recordedFrames = 39
        record.bytes = 1 << 33
        record.ended = "stopped"
        let types: [EventType] = [
            try roundTrip(FaceEvent(event: "enter", time: eventTime(Self.face.time), face: .init(Self.face), viewBox: nil)),
            try roundTrip(
                FaceEvent(
                    event: FaceEvent.everyFrame, time: 0, face: .init(Self.face),
                    viewBox: MetadataRecord.Box(CGRect(x: 10.26, y: 0, width: 1080, height: 607.5), places: 1))),
            try roundTrip(CodeEvent(event: "appear", code: Self.codes[0], viewBox: nil)),
            try roundTrip(CodeEvent(event: "appear", code: Self.codes[0], viewBox: nil, source: "dir/a.png")),
            try roundTrip(
                FaceEvent(event: "enter", time: 0, face: .init(Self.face), viewBox: nil, source: "dir/b.png")),
            try roundTrip(CodeEvent(event: "repeat", code: Self.codes[1], viewBox: MetadataRecord.Box(x: 1, y: 2, w: 3, h: 4))),
            try roundTrip(CodeEvent(event: "leave", code: Self.codes[0], viewBox: nil)),
            try roundTrip(
                MotionEvent(
                    event: "start",
                    motion: MetadataMotionObject(
                        regions: [CGRect(x: 0.1, y: 0.2, width: 0.3, height: 0.4), CGRect(x: 0.6, y: 0.6, width: 0.1, height: 0.1)],
                        changedFraction: 0.012345, time: MediaTime(seconds: 2.1), inputID: CaptureInput.ID(rawValue: 1)))),
            try roundTrip(StartEvent(run: "0a1b2c3d", clock: "camera", input: summary.input)),
            try roundTrip(SnapshotEvent(path: "/tmp/a.jpg", time: 0.8, width: 640, height: 480, faceIDs: [], reason: "snap")),
            try roundTrip(
                SnapshotEvent(
                    path: "/tmp/s.jpg", time: 1.5, width: 640, height: 480, faceIDs: [1], reason: "newFace", faces: [1, 2],
                    preFrames: 2)),
            try roundTrip(RecordingEvent(path: "/tmp/out.avi", width: 320, height: 240)),
            try roundTrip(DropEvent(reason: "frameWasLate", count: 3, total: 24)),
            try roundTrip(ErrorEvent(code: "writeFailed", message: "disk full\u{7F}")),
            try roundTrip(summary),
            try roundTrip(record),
            try roundTrip(several),
            try roundTrip(
                StatsEvent(
                    frames: 300, analysed: 298, skipped: 2, fps: 29.8, detectionMs: .init(p50: 12.1, p99: 30.4), cpu: 85,
                    rssBytes: 150_000_000, seconds: 10.002)),
            try roundTrip(StatsEvent(frames: 3, analysed: 3, skipped: 0, fps: 3, detectionMs: nil, cpu: 1.5, rssBytes: 1, seconds: 1)),
            try roundTrip(
                DevicesEvent(devices: [.init(index: 0, name: "Cam", uniqueID: "usb-1", position: "unspecified", v4l2: nil)])),
            try roundTrip(
                FormatEvent(
                    device: "/dev/video0", fourCC: "MJPG", width: 1280, height: 720, fps: 15, adjusted: true,
                    requested: "MJPG 1280x720@30")),
            try roundTrip(InterruptedEvent(code: "deviceDisconnected", message: "/dev/video0 is gone")),
            try roundTrip(InterruptionEndedEvent()),
            try roundTrip(ControlsEvent(device: "/dev/video0", name: "Cam", controls: [])),
            try roundTrip(
                ClipEvent(
                    path: "/var/lib/cvcam/clips/door-20261124-170307.345-clip.avi", start: 1.2, end: 4.9,
                    startWallTime: "2026-11-24T17:03:07.345+01:00", endWallTime: "2026-11-24T17:03:11.045+01:00", duration: 3.7,
                    frames: 38, bytes: 912_345, faceIDs: [3], triggers: ["face"], continues: false, ended: "postRoll")),
            try roundTrip(
                RetentionEvent(
                    kind: "snapshots", reason: "maxAge", count: 2, bytes: 181_000,
                    files: [.init(path: "/s/door-20261020-081500.000-face1.jpg", bytes: 90_500, modified: "2026-10-20T08:15:00.120+02:00")])),
        ]
        #expect(Set(types) == Set(EventType.allCases))
    }

    @Test func roundingHappensWhenAnEventIsMade() throws {
        let line = EventPrinter.encode(FaceEvent(event: "enter", time: 1.0 / 3, face: .init(Self.face), viewBox: nil))
        #expect(line.contains(#""box":{"h":0.3333,"w":0.25,"x":0.1235,"y":-0.0012}"#), "\(line)")
        #expect(line.contains(#""score":0.988"#) && line.contains(#""roll":-12.3"#) && !line.contains("yaw"))
        #expect(line.contains(#""landmarks":[[0.2,0.3],[0.3,0.3]]"#))
        // A binary payload: `text` is null, not missing; the bytes are in base64.
        let binary = EventPrinter.encode(CodeEvent(event: "appear", code: Self.codes[0], viewBox: nil))
        #expect(binary.contains(#""text":null"#) && binary.contains(#""base64":"AJv/""#), "\(binary)")
    }

    @Test func aLineOfAnotherTypeOrSchemaDoesNotDecode() {
        let drop = EventPrinter.encode(DropEvent(reason: "frameWasLate", count: 1, total: 1))
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(Event<ErrorEvent>.self, from: Data(drop.utf8)) }
        let future = drop.replacingOccurrences(of: #""schema":1"#, with: #""schema":2"#)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(Event<DropEvent>.self, from: Data(future.utf8)) }
    }

    // MARK: The schema's documentation (Docs/ndjson.md)

    /// The lines of the fenced block after `heading` in Docs/ndjson.md.
    func readmeBlock(after heading: String) throws -> [String] {
        let readme = try String(contentsOf: CLI.packageRoot.appendingPathComponent("Docs/ndjson.md"), encoding: .utf8)
        let start = try #require(readme.range(of: heading), "Docs/ndjson.md has no '\(heading)'")
        let lines = readme[start.upperBound...].split(separator: "\n", omittingEmptySubsequences: false)
        let open = try #require(lines.firstIndex { $0.hasPrefix("```") })
        let close = try #require(lines[(open + 1)...].firstIndex { $0.hasPrefix("```") })
        return lines[(open + 1)..<close].map(String.init)
    }

    /// `line` decoded with the type its `type` names and encoded again.
    func reencoded(_ line: String) throws -> (EventType, String) {
        struct Header: Decodable { var type: EventType }
        let data = Data(line.utf8)
        func again<Body: EventBody>(_: Body.Type) throws -> String {
            let event = try JSONDecoder().decode(Event<Body>.self, from: data)
            return EventPrinter.encode(event.body, wallTime: event.wallTime ?? "(missing)")
        }
        let type = try JSONDecoder().decode(Header.self, from: data).type
        switch type {
        case .start: return (type, try again(StartEvent.self))
        case .face: return (type, try again(FaceEvent.self))
        case .code: return (type, try again(CodeEvent.self))
        case .motion: return (type, try again(MotionEvent.self))
        case .snapshot: return (type, try again(SnapshotEvent.self))
        case .recording: return (type, try again(RecordingEvent.self))
        case .drop: return (type, try again(DropEvent.self))
        case .error: return (type, try again(ErrorEvent.self))
        case .summary: return (type, try again(SummaryEvent.self))
        case .devices: return (type, try again(DevicesEvent.self))
        case .format: return (type, try again(FormatEvent.self))
        case .interrupted: return (type, try again(InterruptedEvent.self))
        case .interruptionEnded: return (type, try again(InterruptionEndedEvent.self))
        case .controls: return (type, try again(ControlsEvent.self))
        case .stats: return (type, try again(StatsEvent.self))
        case .clip: return (type, try again(ClipEvent.self))
        case .retention: return (type, try again(RetentionEvent.self))
        }
    }

    @Test func theReadmesExamplesAreWhatTheSchemaPrints() throws {
        let lines = try readmeBlock(after: "One example of each event type")
        var seen = Set<EventType>()
        for line in lines {
            let (type, again) = try reencoded(line)
            #expect(again == line, "Docs/ndjson.md example differs from what cvcam prints")
            seen.insert(type)
        }
        #expect(seen == Set(EventType.allCases), "Docs/ndjson.md examples lack \(Set(EventType.allCases).subtracting(seen))")
    }

    @Test func theReadmesPhotoRecordIsWhatThePhotoOutputWrites() throws {
        let lines = try readmeBlock(after: "The record stored with a photo")
        #expect(lines.count == 1)
        for line in lines {
            let record = try JSONDecoder().decode(PhotoAnnotation.self, from: Data(line.utf8))
            #expect(record.jsonText() == line)
        }
    }
}
