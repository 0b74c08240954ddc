import CaptureKit
import Foundation
import Testing
import AppTestSupport

/// A cvcam binary copied out of the build tree finds its face models through each step of the
/// documented search order (`FaceModelSearch`, Docs/install.md), as `cvcam doctor` reports.
@Suite struct ModelSearchTests {
    /// A fresh folder holding a copy of the binary at `relativeBinary`.
    private func copiedBinary(_ relativeBinary: String) throws -> (root: URL, binary: URL) {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("cvcam-models-\(UUID().uuidString)")
        let binary = root.appendingPathComponent(relativeBinary)
        try FileManager.default.createDirectory(at: binary.deletingLastPathComponent(), withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: CLI.binary, to: binary)
        return (root, binary)
    }

    private func models(into folder: URL, files: [String] = [FaceDetector.yuNetModelName, FaceDetector.haarCascadeName]) throws {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for file in files {
            try FileManager.default.copyItem(
                at: CLI.packageRoot.appendingPathComponent("Models/\(file)"), to: folder.appendingPathComponent(file))
        }
    }

    /// `cvcam doctor`'s "in use:" line, run without CVCAM_MODELS (empty counts as unset).
    private func inUse(_ binary: URL, _ arguments: [String] = [], environment: [String: String] = [:]) throws -> (Int32, String) {
        let result = try CLI.run(
            ["doctor"] + arguments, environment: ["CVCAM_MODELS": ""].merging(environment) { $1 }, executable: binary)
        let line = result.stdout.split(separator: "\n").first { $0.contains("in use:") }.map(String.init) ?? ""
        return (result.status, line)
    }

    private var systemModelsInstalled: Bool {
        ["/usr/share/cvcam/models", "/usr/local/share/cvcam/models"].contains {
            FileManager.default.fileExists(atPath: "\($0)/\(FaceDetector.yuNetModelName)")
        }
    }

    @Test func explicitFolderIsTheOnlyPlaceLookedIn() throws {
        let (root, binary) = try copiedBinary("bin/cvcam")
        defer { try? FileManager.default.removeItem(at: root) }
        let chosen = root.appendingPathComponent("chosen")
        try models(into: chosen)
        try models(into: root.appendingPathComponent("share/cvcam/models"))
        let (status, line) = try inUse(binary, ["--models", chosen.path])
        #expect(status == 0)
        #expect(line.contains("\(chosen.path)/\(FaceDetector.yuNetModelName)"), "\(line)")

        // An explicit folder without the models is an error, not a silent fallback elsewhere.
        let empty = root.appendingPathComponent("empty")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        let (emptyStatus, emptyLine) = try inUse(binary, ["--models", empty.path])
        #expect(emptyStatus == 1)
        #expect(emptyLine.contains("none"), "\(emptyLine)")
    }

    @Test func environmentVariableComesBeforeTheInstalledTree() throws {
        let (root, binary) = try copiedBinary("bin/cvcam")
        defer { try? FileManager.default.removeItem(at: root) }
        let named = root.appendingPathComponent("named")
        try models(into: named)
        try models(into: root.appendingPathComponent("share/cvcam/models"))
        let (status, line) = try inUse(binary, environment: ["CVCAM_MODELS": named.path])
        #expect(status == 0)
        #expect(line.contains("\(named.path)/\(FaceDetector.yuNetModelName)"), "\(line)")
    }

    @Test func installedTreeBesideTheExecutable() throws {
        let (root, binary) = try copiedBinary("bin/cvcam")
        defer { try? FileManager.default.removeItem(at: root) }
        try models(into: root.appendingPathComponent("share/cvcam/models"))
        let (status, line) = try inUse(binary)
        #expect(status == 0)
        #expect(line.contains("\(root.path)/share/cvcam/models/\(FaceDetector.yuNetModelName)"), "\(line)")
    }

    /// A binary with the library's resources beside it, as `swift build` lays out a build folder
    /// (issue #32): found after an installed tree, before everything else.
    @Test func theLibraryResourcesBesideTheExecutable() throws {
        let (root, binary) = try copiedBinary("bin/cvcam")
        defer { try? FileManager.default.removeItem(at: root) }
        let resources = root.appendingPathComponent("bin/some-package_CaptureVision.resources/Models")
        try models(into: resources)
        let (status, line) = try inUse(binary)
        #expect(status == 0)
        #expect(line.contains("\(resources.path)/\(FaceDetector.yuNetModelName)"), "\(line)")
        let doctor = try CLI.run(["doctor"], environment: ["CVCAM_MODELS": ""], executable: binary).stdout
        #expect(doctor.contains("the library's resources: \(resources.path)"), "\(doctor)")

        try models(into: root.appendingPathComponent("share/cvcam/models"))
        let (_, installedLine) = try inUse(binary)
        #expect(installedLine.contains("\(root.path)/share/cvcam/models/"), "\(installedLine)")
    }

    @Test func checkoutOfABinaryInABuildFolder() throws {
        let (root, binary) = try copiedBinary(".build/x86_64-unknown-linux-gnu/debug/cvcam")
        defer { try? FileManager.default.removeItem(at: root) }
        try Data("// swift-tools-version: 6.0\n".utf8).write(to: root.appendingPathComponent("Package.swift"))
        try models(into: root.appendingPathComponent("Models"))
        let (status, line) = try inUse(binary)
        #expect(status == 0)
        #expect(line.contains("\(root.path)/Models/\(FaceDetector.yuNetModelName)"), "\(line)")

        // Without a Package.swift the build-looking folder is not a checkout.
        try FileManager.default.removeItem(at: root.appendingPathComponent("Package.swift"))
        let (_, strayLine) = try inUse(binary)
        #expect(!strayLine.contains("\(root.path)/Models"), "\(strayLine)")
    }

    @Test func openCVDataHaarCascadeIsTheLastResort() throws {
        let cascade = "/usr/share/opencv4/haarcascades/\(FaceDetector.haarCascadeName)"
        guard FileManager.default.fileExists(atPath: cascade), !systemModelsInstalled else {
            print("skipped: needs opencv-data's cascade (Tools/setup) and no cvcam models installed system-wide")
            return
        }
        let (root, binary) = try copiedBinary("bin/cvcam")
        defer { try? FileManager.default.removeItem(at: root) }
        let (status, line) = try inUse(binary)
        #expect(status == 0)
        #expect(line.contains("the Haar cascade \(cascade)"), "\(line)")
    }

    /// The system folders' places in the order, which a test cannot fill without root.
    @Test func orderOfTheSystemFolders() {
        let search = FaceModelSearch(
            environment: [:], executable: URL(fileURLWithPath: "/opt/cvcam/bin/cvcam"))
        #expect(search.candidates.map(\.place) == [.installedBesideExecutable, .system, .local, .openCVData])
        #expect(search.candidates.map(\.folder.path) == [
            "/opt/cvcam/share/cvcam/models", "/usr/share/cvcam/models", "/usr/local/share/cvcam/models",
            "/usr/share/opencv4/haarcascades",
        ])
    }
}
