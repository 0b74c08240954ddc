/// Exit codes documented in `--help` and the README (zbarimg's convention).
package enum ExitStatus {
    package static let ok: Int32 = 0
    package static let runtimeError: Int32 = 1
    package static let nothingFound: Int32 = 4
    package static let usage: Int32 = 64
    package static let interruptedDuringStartup: Int32 = 130
}
