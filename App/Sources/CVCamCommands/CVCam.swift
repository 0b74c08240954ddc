import ArgumentParser
import CaptureJobs
import Foundation

/// The `cvcam` command: AVFoundation-style capture for Linux cameras, from the shell.
///
/// The command tree is a library so that the executable (`App/Sources/cvcam/main.swift`) only
/// calls `main()`, and the fuzzer and the tests parse exactly what the tool parses.
public struct CVCam: ParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "cvcam",
        abstract: "Faces, QR codes, photos and movies from Linux cameras, video files and image folders.",
        discussion: """
            Inputs: a V4L2 camera (--device, or the default camera), a video file (MP4, MKV, AVI), \
            an image or a folder of images, or a synthetic camera (--input synthetic:SPEC, see \
            `cvcam help faces`).

            Exit codes: 0 ok; 1 runtime error (camera or file failed); 4 nothing found \
            (scan on file inputs that ended without a code, in any of them; snap --wait-for-face \
            without a face); 64 usage error.

            Text output: what was found on stdout; error, drop, stats and summary lines on stderr.
            """,
        version: CVCamVersion.string,
        subcommands: [
            Devices.self, Controls.self, Faces.self, Scan.self, Snap.self, Watch.self, Record.self, Serve.self,
            Preview.self, Doctor.self,
        ]
    )

    public init() {}

    /// ArgumentParser's main, except that error messages (which quote file names and library
    /// messages) are escaped before they reach the terminal, and a closed stdout is not fatal.
    public static func main() {
        // A reader that went away (`cvcam record … | head`) must not kill a recording mid-file:
        // writes then fail with EPIPE, which the printer ignores.
        signal(SIGPIPE, SIG_IGN)
        do {
            var command = try parseAsRoot()
            // Before the command makes its session, whose logger takes the handler it finds.
            let output = (command as? HasOutputOptions)?.output
            // serve has no output options but its own -v.
            LogSetup.bootstrap(verbose: output?.verbose ?? (command as? Serve)?.verbose ?? false)
            try command.run()
        } catch {
            let code = exitCode(for: error)
            let message = fullMessage(for: error)
            if code == .success {
                if !message.isEmpty { print(message) }  // --help, --version: our own text
            } else if !message.isEmpty {
                TerminalText.printError(message)
            }
            Foundation.exit(code.rawValue)
        }
    }
}
