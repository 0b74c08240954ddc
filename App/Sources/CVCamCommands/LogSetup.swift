import CaptureJobs
import CaptureKit
import Logging

/// The CLI's one decision about what is logged on stderr, made from -v and -q before any
/// command runs, so every logger (the session's included) is made after it: swift-log hands
/// a logger its handler when the logger is created.
///
/// - default: warnings and errors (the Haar fallback in use, images skipped); FFmpeg and
///   OpenCV silent (cvcam reports their failures in its own words);
/// - `-v`: also cvcam's debug lines (with the logger's label), and the libraries' warnings and
///   errors (not their info lines: OpenCV writes those to stdout, into the NDJSON stream).
///
/// -q does not hide warnings: an image skipped is something to know even in data-only output.
///
/// A session's runtime error is reported once, as the command's `error:` line (or `error`
/// event); the session's own log line about it shows only with -v.
///
/// Threading: call `bootstrap` once, on the main thread, before any `Logger` exists.
enum LogSetup {
    /// The label of the session's logger, whose errors the command reports itself.
    static let sessionLabel = "cvcam.session"

    static func bootstrap(verbose: Bool) {
        let level: Logger.Level = verbose ? .debug : .warning
        LoggingSystem.bootstrap { label in
            EscapingLogHandler(
                label: label, logLevel: label == sessionLabel && !verbose ? .critical : level, showsLabel: verbose)
        }
        LibraryLogging.setLevel(verbose ? .warning : .silent)
    }
}

/// Commands whose output options decide the log level (read on the main thread, before `run`).
protocol HasOutputOptions {
    var output: OutputOptions { get }
}

extension Faces: HasOutputOptions {}
extension Scan: HasOutputOptions {}
extension Snap: HasOutputOptions {}
extension Watch: HasOutputOptions {}
extension Record: HasOutputOptions {}
