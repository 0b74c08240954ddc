import Foundation

/// The emulated V4L2 camera (libV4L2Emulator.so) preloaded into a cvcam child only: a folder
/// with its control file (faults), and the environment that preloads it.
package struct EmulatedCamera {
    package struct Missing: Error, CustomStringConvertible {
        package var description: String
    }

    package let dir: URL
    package var control: URL { dir.appendingPathComponent("emulator.control") }
    package var log: URL { URL(fileURLWithPath: control.path + ".log") }
    package let environment: [String: String]

    package init() throws {
        let emulator = CLI.emulatorLibrary
        guard FileManager.default.fileExists(atPath: emulator.path) else {
            throw Missing(description: "\(emulator.path) is missing: the library package builds it (swift build)")
        }
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("cvcam-camera-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        environment = [
            "LD_PRELOAD": emulator.path, "V4L2_EMULATOR_IMAGES": CLI.fixture("images"),
            "V4L2_EMULATOR_CONTROL": dir.appendingPathComponent("emulator.control").path,
            "CVCAM_V4L2_DEVICES": "/dev/video-emulated0:/dev/video-emulated1",
        ]
    }

    package func faults(_ lines: String...) throws { try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: control) }
    package func clearFaults() { try? FileManager.default.removeItem(at: control) }
    package func run(_ arguments: [String]) throws -> CLI.Result { try CLI.run(arguments, environment: environment) }
    package func remove() { try? FileManager.default.removeItem(at: dir) }

    /// The options that pick the emulated camera.
    package static let device = ["--device", "/dev/video-emulated0"]
}
