import ArgumentParser
import CaptureJobs
import CaptureKit
import Foundation

/// `cvcam doctor`: what an installed cvcam finds on this machine — the face models (every place
/// it looks, in order), the libraries it runs on, and whether this user can open each camera.
struct Doctor: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show which models, libraries and cameras cvcam finds, and what is wrong.",
        discussion: """
            Face models are looked for in this order; each file is taken from the first place \
            that has it: --models DIR, else CVCAM_MODELS (either, when given, is the only place \
            looked in); ../share/cvcam/models beside the executable; the library's resources \
            beside the executable (the *_CaptureVision.resources/Models folder `swift build` \
            makes); the checkout's Models/ for a binary in a build folder; \
            /usr/share/cvcam/models; /usr/local/share/cvcam/models; \
            OpenCV's Haar cascades (/usr/share/opencv4/haarcascades, Debian's opencv-data).

            Exit codes: 0 a face model was found; 1 none was found.
            """)

    @Option(help: "Folder holding the face models, as for the face commands.", completion: .directory)
    var models: String?

    func run() throws {
        let search = FaceModelSearch(explicit: models.map { URL(fileURLWithPath: $0) })
        print("cvcam \(CVCamVersion.string)")

        print("face models (each file from the first place that has it):")
        let files = [FaceDetector.yuNetModelName, FaceDetector.haarCascadeName]
        for candidate in search.candidates {
            let present = files.filter {
                FileManager.default.fileExists(atPath: candidate.folder.appendingPathComponent($0).path)
            }
            let found = present.isEmpty ? "nothing" : present.joined(separator: ", ")
            print("  \(candidate.place.rawValue): \(TerminalText.escaped(candidate.folder.path)): \(found)")
        }
        let yuNet = search.locate(FaceDetector.yuNetModelName)
        let haar = search.locate(FaceDetector.haarCascadeName)
        if let yuNet {
            print("  in use: YuNet \(TerminalText.escaped(yuNet.file.path))")
        } else if let haar {
            print("  in use: the Haar cascade \(TerminalText.escaped(haar.file.path)) (no YuNet found: fewer faces found, no landmarks)")
        } else {
            print("  in use: none — faces cannot be detected; install the models or pass --models")
        }

        print("libraries:")
        for library in LibraryVersions.all { print("  \(library.name) \(library.version)") }

        print("cameras:")
        let nodes = V4L2Discovery.nodePaths()
        if nodes.isEmpty { print("  none found") }
        for node in nodes { print("  \(TerminalText.escaped(node)): \(Self.access(node))") }

        if yuNet == nil && haar == nil { throw ExitCode(ExitStatus.runtimeError) }
    }

    /// Whether this process may open `node` for capture, and if not, why, in words an operator acts on.
    static func access(_ node: String) -> String {
        let fd = open(node, O_RDWR | O_NONBLOCK)
        if fd >= 0 {
            close(fd)
            return "can be opened"
        }
        switch errno {
        case EACCES, EPERM:
            let user = getpwuid(geteuid()).map { String(cString: $0.pointee.pw_name) } ?? "this user"
            return "permission denied: add \(TerminalText.escaped(user)) to the `video` group (sudo adduser \(TerminalText.escaped(user)) video), then log in again"
        case EBUSY:
            return "busy: another program holds it"
        case ENOENT, ENODEV, ENXIO:
            return "gone (unplugged?)"
        default:
            return "cannot be opened: \(String(cString: strerror(errno)))"
        }
    }
}
