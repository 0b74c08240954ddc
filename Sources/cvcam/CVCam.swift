import ArgumentParser

/// The `cvcam` command: AVFoundation-style capture for Linux cameras, from the shell.
@main
struct CVCam: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cvcam",
        abstract: "Faces, QR codes, photos and movies from Linux cameras, video files and image folders.",
        discussion: """
            Inputs: a V4L2 camera (--device, or the default camera), a video file (MP4, MKV, AVI), \
            an image or a folder of images, or a synthetic camera (--input synthetic:SPEC, see \
            `cvcam help faces`).

            Exit codes: 0 ok; 1 runtime error (camera or file failed); 4 nothing found \
            (scan on a file input that ended without a code; snap --wait-for-face without a face); 64 usage error.
            """,
        version: "0.1.0",
        subcommands: [Devices.self, Faces.self, Scan.self, Snap.self, Watch.self, Record.self]
    )
}

/// Exit codes documented in `--help` and the README (zbarimg's convention).
enum ExitStatus {
    static let ok: Int32 = 0
    static let runtimeError: Int32 = 1
    static let nothingFound: Int32 = 4
    static let usage: Int32 = 64
    static let interruptedDuringStartup: Int32 = 130
}
