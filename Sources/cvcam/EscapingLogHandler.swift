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

    func log(
        level: Logger.Level, message: Logger.Message, metadata explicit: Logger.Metadata?, source: String,
        file: String, function: String, line: UInt
    ) {
        let all = metadata.merging(explicit ?? [:]) { $1 }
        let details = all.isEmpty ? "" : " " + all.sorted { $0.key < $1.key }.map { "\($0)=\($1)" }.joined(separator: " ")
        TerminalText.printLine("\(level): \(showsLabel ? label + ": " : "")\(message)\(details)")
    }
}
