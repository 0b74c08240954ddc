import Logging

/// The CLI's log handler: one line per message on stderr, `level: message key=value…`, with the
/// message and metadata passed through `TerminalText.escaped` first, because library messages
/// carry file names, device names and payloads from outside. With `showsLabel` (-v) the
/// logger's label follows the level, so debug lines say where they come from.
///
/// Threading: thread-safe (each line is one `write` to stderr).
package struct EscapingLogHandler: LogHandler {
    package let label: String
    package var logLevel: Logger.Level
    package var metadata: Logger.Metadata = [:]
    package var showsLabel: Bool = false

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    package func log(event: LogEvent) {
        TerminalText.printLine(line(for: event))
    }

    /// The line written for `event`, before escaping: the handler's metadata overlaid with the
    /// event's, sorted by key, then the event's error, if any.
    package func line(for event: LogEvent) -> String {
        let all = metadata.merging(event.metadata ?? [:]) { $1 }
        var details = all.isEmpty ? "" : " " + all.sorted { $0.key < $1.key }.map { "\($0)=\($1)" }.joined(separator: " ")
        if let error = event.error { details += " error=\(error)" }
        return "\(event.level): \(showsLabel ? label + ": " : "")\(event.message)\(details)"
    }

    /// Creates the value from each of its properties.
    package init(label: String, logLevel: Logger.Level, metadata: Logger.Metadata = [:], showsLabel: Bool = false) {
        self.label = label
        self.logLevel = logLevel
        self.metadata = metadata
        self.showsLabel = showsLabel
    }
}
