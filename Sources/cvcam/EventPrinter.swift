import CaptureKit
import Foundation

/// Writes events to stdout: one text line each, or one NDJSON object each (`--json`).
///
/// JSON schema version 1 (documented in the README): every line has `schema` (1) and `type`
/// ("face", "code", "snapshot", "drop", "error", "summary"); times are the frame's presentation
/// time in seconds; boxes are device space {x, y, w, h} (0…1) and, with --view, `viewBox` in
/// view points. Keys are sorted and numbers rounded so output is stable.
///
/// Threading: thread-safe (a lock serialises writes).
final class EventPrinter: @unchecked Sendable {
    // @unchecked: writes are serialised by `lock`; the rest is immutable.
    static let schemaVersion = 1

    let json: Bool
    let preview: PreviewMapping?
    private let lock = NSLock()
    private let statusLine: StatusLine?
    /// Set when stdout's reader went away (EPIPE): printing stops, the work goes on.
    private var stdoutClosed = false

    init(json: Bool, preview: PreviewMapping?, statusLine: StatusLine?) {
        self.json = json
        self.preview = preview
        self.statusLine = statusLine
    }

    /// Writes one event: `fields` as JSON, or `text` as a line.
    func emit(_ type: String, _ fields: [String: Any], text: @autoclosure () -> String) {
        let line: String
        if json {
            var object = fields
            object["schema"] = Self.schemaVersion
            object["type"] = type
            line = Self.encode(object)
        } else {
            // Text lines carry file names and payloads: escaped here, once, for every event.
            line = TerminalText.escaped(text())
        }
        lock.withLock {
            statusLine?.clear()
            guard !stdoutClosed else { return }
            // The throwing write: the non-throwing one traps on EPIPE.
            do { try FileHandle.standardOutput.write(contentsOf: Data((line + "\n").utf8)) } catch { stdoutClosed = true }
        }
    }

    static func encode(_ object: [String: Any]) -> String {
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]) else {
            return "{\"schema\":\(schemaVersion),\"type\":\"error\",\"message\":\"unencodable event\"}"
        }
        return TerminalText.jsonEscaped(String(decoding: data, as: UTF8.self))
    }

    // MARK: Formatting helpers

    static func round(_ value: Double, _ places: Double = 4) -> Double {
        let scale = pow(10, places)
        return (value * scale).rounded() / scale
    }

    static func boxJSON(_ r: CGRect) -> [String: Double] {
        ["x": round(r.minX), "y": round(r.minY), "w": round(r.width), "h": round(r.height)]
    }

    static func pointsJSON(_ points: [CGPoint]) -> [[Double]] {
        points.map { [round($0.x), round($0.y)] }
    }

    static func clock(_ seconds: Double) -> String {
        let total = max(0, seconds)
        let h = Int(total / 3600)
        let m = Int(total.truncatingRemainder(dividingBy: 3600) / 60)
        let s = total.truncatingRemainder(dividingBy: 60)
        return String(format: "%02d:%02d:%06.3f", h, m, s)
    }

    static func boxText(_ r: CGRect) -> String {
        String(format: "%.3f,%.3f %.3fx%.3f", r.minX, r.minY, r.width, r.height)
    }

    /// Adds `viewBox` (and text) for --view.
    func viewFields(_ bounds: CGRect) -> (json: [String: Any], text: String) {
        guard let preview else { return ([:], "") }
        let r = preview.layerRect(fromDeviceRect: bounds)
        let json: [String: Any] = ["viewBox": ["x": Self.round(r.minX, 1), "y": Self.round(r.minY, 1), "w": Self.round(r.width, 1), "h": Self.round(r.height, 1)]]
        return (json, String(format: "  view %.0f,%.0f %.0fx%.0f", r.minX, r.minY, r.width, r.height))
    }
}
