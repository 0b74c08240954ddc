import Logging

/// The CLI's log handler: one line per message on stderr, `level: message key=value…`, with the
/// message and metadata passed through `TerminalText.escaped` first, because library messages
/// carry file names, device names and payloads from outside. With `showsLabel` (-v) the
/// logger's label follows the level, so debug lines say where they come from.
///
/// Threading: thread-safe (each line is one `write` to stderr).
struct EscapingLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]
    var showsLabel = false

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        TerminalText.printLine(line(for: event))
    }

    /// The line written for `event`, before escaping: the handler's metadata overlaid with the
    /// event's, sorted by key, then the event's error, if any.
    func line(for event: LogEvent) -> String {
        let all = metadata.merging(event.metadata ?? [:]) { $1 }
        var details = all.isEmpty ? "" : " " + all.sorted { $0.key < $1.key }.map { "\($0)=\($1)" }.joined(separator: " ")
        if let error = event.error { details += " error=\(error)" }
        return "\(event.level): \(showsLabel ? label + ": " : "")\(event.message)\(details)"
    }
}
