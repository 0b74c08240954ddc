import CaptureKit
import Foundation

/// Writes events: one NDJSON object each on stdout (`--json`), or one text line each, with what
/// was found on stdout and `error:`, `drop:`, `stats:` and `summary:` lines on stderr (as
/// zbarimg does), so `cvcam scan … > codes.txt` holds only codes. With -q, text mode leaves out
/// the start line (`recording`), drop reports and the summary; errors and asked-for stats stay.
///
/// The JSON lines are `Event`s of the typed schema in EventSchema.swift (version 1, documented
/// in the README), all through `encode(_:)`: keys sorted, numbers rounded where the events are
/// made, so output is stable.
///
/// Threading: thread-safe (a lock serialises writes).
package final class EventPrinter: @unchecked Sendable {
    // @unchecked: writes are serialised by `lock`; the rest is immutable.

    package let json: Bool
    package let quiet: Bool
    package let preview: PreviewMapping?
    /// The clock of the input's frame times: decides what `wallTime` and text times say.
    package let clock: FrameClock
    private let lock = NSLock()
    private let statusLine: StatusLine?
    /// Set when stdout's reader went away (EPIPE): printing stops, the work goes on.
    private var stdoutClosed = false
    /// Where every event goes instead of stdout and stderr, as its JSON line (`cvcam serve`: a
    /// camera's MQTT topics); called on the emitting thread.
    package let sink: (@Sendable (any EventBody, String) -> Void)?

    package init(
        json: Bool, quiet: Bool = false, preview: PreviewMapping?, statusLine: StatusLine?, clock: FrameClock = .media,
        sink: (@Sendable (any EventBody, String) -> Void)? = nil
    ) {
        self.json = json || sink != nil
        self.quiet = quiet
        self.preview = preview
        self.statusLine = statusLine
        self.clock = clock
        self.sink = sink
    }

    /// Writes one event: `body` as a JSON line, or `text` as a line. `time`: the frame time the
    /// event is about, for its `wallTime` (nil: now).
    package func emit<Body: EventBody>(_ body: @autoclosure () -> Body, at time: MediaTime? = nil, text: @autoclosure () -> String) {
        emit(body(), wall: wallDate(time), text: text())
    }

    /// Writes one event stamped `wall` (when a file named by that moment was written, say).
    package func emit<Body: EventBody>(_ body: @autoclosure () -> Body, wall: Date, text: @autoclosure () -> String) {
        if let sink {
            let event = body()
            sink(event, Self.encode(event, wall: wall))
            return
        }
        if !json && quiet && Self.quietLeavesOut.contains(Body.type) { return }
        // Text lines carry file names and payloads: escaped here, once, for every event; and,
        // but for a code's line (its payload is the data asked for), redacted.
        let line = json ? Self.encode(body(), wall: wall) : TerminalText.escaped(Body.type == .code ? text() : Redaction.redact(text()))
        let toStderr = !json && Body.type.isDiagnostic
        lock.withLock {
            statusLine?.clear()
            if toStderr {
                try? FileHandle.standardError.write(contentsOf: Data((line + "\n").utf8))
                return
            }
            guard !stdoutClosed else { return }
            // The throwing write: the non-throwing one traps on EPIPE.
            do { try FileHandle.standardOutput.write(contentsOf: Data((line + "\n").utf8)) } catch { stdoutClosed = true }
        }
    }

    /// What -q leaves out of text output: everything but the data, errors and asked-for stats.
    package static let quietLeavesOut: Set<EventType> = [.summary, .drop, .recording]

    /// The one JSON encoding of events: sorted keys, unescaped slashes, DEL, C1 and bidi
    /// controls as `\uXXXX` so a line cannot reorder or recolour a terminal that shows it, and
    /// every field that may quote a URL or a library's message redacted (`redactingSecrets`).
    package static func encode<Body: EventBody>(_ body: Body, wall: Date = Date()) -> String {
        encode(body, wallTime: LocalTimestamp(wall).rfc3339)
    }

    /// `body` with an already formatted `wallTime`.
    package static func encode<Body: EventBody>(_ body: Body, wallTime: String) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(Event(body.redactingSecrets(), wallTime: wallTime)) else {
            // Only a non-finite number (a detector's bug) fails to encode: say so rather than print nothing.
            return "{\"message\":\"unencodable \(Body.type.rawValue) event\",\"schema\":1,\"type\":\"error\",\"wallTime\":\"\(wallTime)\"}"
        }
        return TerminalText.jsonEscaped(String(decoding: data, as: UTF8.self))
    }

    // MARK: Formatting helpers

    /// The wall-clock moment of a frame time: mapped from the camera's clock, or now for media
    /// time (a file's frame is reported as it is analysed).
    package func wallDate(_ time: MediaTime?) -> Date {
        guard let time else { return Date() }
        return WallClock.shared.date(for: time, on: clock)
    }

    /// A frame time as text lines show it: local wall time of day for cameras, the position
    /// in the input (`clock(_:)`) otherwise.
    package func timeText(_ time: MediaTime) -> String {
        clock == .monotonic ? LocalTimestamp(wallDate(time)).timeOfDay : Self.clock(time.seconds)
    }

    /// What the start line says about times.
    package var clockDescription: (json: String, text: String) {
        clock == .monotonic
            ? ("camera", "times are local wall-clock time")
            : ("media", "times are positions in the input (media time)")
    }

    package static func clock(_ seconds: Double) -> String {
        let total = max(0, seconds)
        let h = Int(total / 3600)
        let m = Int(total.truncatingRemainder(dividingBy: 3600) / 60)
        let s = total.truncatingRemainder(dividingBy: 60)
        return String(format: "%02d:%02d:%06.3f", h, m, s)
    }

    package static func boxText(_ r: CGRect) -> String {
        String(format: "%.3f,%.3f %.3fx%.3f", r.minX, r.minY, r.width, r.height)
    }

    /// `bounds` in view points for --view (`viewBox`, 1 decimal), and the same for text.
    package func view(_ bounds: CGRect) -> (box: MetadataRecord.Box?, text: String) {
        guard let preview else { return (nil, "") }
        let r = preview.layerRect(fromDeviceRect: bounds)
        return (MetadataRecord.Box(r, places: 1), String(format: "  view %.0f,%.0f %.0fx%.0f", r.minX, r.minY, r.width, r.height))
    }
}
