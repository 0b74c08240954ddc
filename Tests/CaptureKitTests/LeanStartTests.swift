import CaptureKit
import CaptureKitTesting
import Foundation
import Testing

@testable import CaptureVision

/// What a plain SwiftPM build of CaptureKit (the default layout of Package.swift: development,
/// these suites, every package that depends on CaptureKit) promises about the shim's modules
/// (video; objdetect and dnn; imgcodecs): they are linked in, so a program built on CaptureKit
/// needs no file beside it to read videos or find faces (issue #32), and it never looks for one.
/// The shipped layout, where they are loaded on first use from PREFIX/lib/cvcam and a still
/// image's codes map none of them (issue #33), is built by Tools/install only; Tools/check-lean-start
/// checks it on an installed tree (Tools/test-package runs it on the .deb).
///
/// Each case runs the CaptureProbe helper (a program built on CaptureKit, doing what
/// `cvcam scan IMAGE`, `cvcam faces` and a video input do) with the dynamic loader's own record
/// of every object it maps, at start and by dlopen (LD_DEBUG=files).
@Suite(.serialized) struct LeanStartTests {
    struct Run {
        var status: Int32
        var output: String
        var errors: String
        /// File names of every library the loader mapped, in order.
        var libraries: [String]

        func loaded(_ prefix: String) -> Bool { libraries.contains { $0.hasPrefix(prefix) } }
    }

    /// Runs `probe` with `arguments`, its output and the loader's record in files (no pipe can fill).
    static func run(_ probe: URL, _ arguments: [String]) throws -> Run {
        let folder = try TemporaryDirectory()
        let out = folder.url.appendingPathComponent("out"), err = folder.url.appendingPathComponent("err")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        _ = FileManager.default.createFile(atPath: err.path, contents: nil)
        let process = Process()
        process.executableURL = probe
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["LD_DEBUG"] = "files"
        environment["LD_DEBUG_OUTPUT"] = folder.url.appendingPathComponent("ld").path
        process.environment = environment
        process.standardOutput = try FileHandle(forWritingTo: out)
        process.standardError = try FileHandle(forWritingTo: err)
        try process.run()
        process.waitUntilExit()
        var libraries: [String] = []
        // One file per process, "ld.<pid>"; each object mapped gives one line such as
        // "  123: file=libzbar.so.0 [0];  generating link map".
        for name in try FileManager.default.contentsOfDirectory(atPath: folder.url.path) where name.hasPrefix("ld.") {
            let text = try String(contentsOf: folder.url.appendingPathComponent(name), encoding: .utf8)
            for line in text.split(separator: "\n") where line.hasSuffix("generating link map") {
                guard let range = line.range(of: "file=") else { continue }
                let file = line[range.upperBound...].prefix { !$0.isWhitespace }
                libraries.append(String(file.split(separator: "/").last ?? file))
            }
        }
        return Run(
            status: process.terminationStatus, output: try String(contentsOf: out, encoding: .utf8),
            errors: try String(contentsOf: err, encoding: .utf8), libraries: libraries)
    }

    /// A 640x480 image holding a QR code of `payload`, written as `name` into `folder` (drawn and
    /// encoded in this process, which may load the modules: the probe is a process of its own).
    static func codeImage(_ payload: String, named name: String, in folder: TemporaryDirectory) throws -> String {
        let symbol = try Imaging.qrSymbol(payload: Array(payload.utf8), version: 0, correction: 1)
        let gray = try PixelBuffer(width: 640, height: 480, pixelFormat: .gray)
        try Imaging.fill(gray, red: 255, green: 255, blue: 255, "filling")
        try Imaging.blit(symbol, into: gray, x: 170, y: 90, width: 300, height: 300, "drawing the code")
        let image = try PixelBuffer(width: 640, height: 480, pixelFormat: .bgr)
        try Imaging.convert(gray, into: image, "converting")
        let path = folder.url.appendingPathComponent(name).path
        try ImageFile.write(image, to: path)
        return path
    }

    static func probe() throws -> URL {
        try #require(MovieFileOutputTests.probeExecutable(), "build the CaptureProbe helper: swift build --build-tests")
    }

    /// The probe copied alone into an empty folder: no module beside it nor in ../lib/cvcam.
    static func probeAlone(in folder: TemporaryDirectory) throws -> URL {
        let alone = folder.url.appendingPathComponent("bin/CaptureProbe")
        try FileManager.default.createDirectory(
            at: alone.deletingLastPathComponent(), withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: try Self.probe(), to: alone)
        return alone
    }

    static func loadedNoModuleFile(_ run: Run) -> Bool {
        !run.libraries.contains { $0.hasPrefix("libCVBridge") }
    }

    @Test(arguments: ["code.png", "code.jpg"])
    func aProgramAloneReadsTheCodesInAStillImage(_ name: String) throws {
        let folder = try TemporaryDirectory()
        let image = try Self.codeImage("alone", named: name, in: folder)
        let run = try Self.run(try Self.probeAlone(in: folder), ["codes", image])
        #expect(run.status == 0, "\(run.errors)")
        #expect(run.output.contains("code alone"), "the probe read no code: \(run.output) \(run.errors)")
        // The record is complete: ZBar, which reads the code, is in it.
        let recorded = run.loaded("libzbar.")
        #expect(recorded, "no loader record: \(run.libraries)")
        #expect(Self.loadedNoModuleFile(run), "loaded a module file: \(run.libraries)")
    }

    @Test func aProgramAloneFindsFaces() throws {
        let folder = try TemporaryDirectory()
        let models = Fixtures.packageRoot.appendingPathComponent("Models").path
        let run = try Self.run(
            try Self.probeAlone(in: folder), ["faces", Fixtures.faceImage("grace_hopper.jpg"), models])
        #expect(run.status == 0, "\(run.errors)")
        #expect(run.output.contains("faces 1"), "\(run.output) \(run.errors)")
        #expect(Self.loadedNoModuleFile(run), "loaded a module file: \(run.libraries)")
    }

    @Test func aProgramAloneReadsAVideo() throws {
        let folder = try TemporaryDirectory()
        let clip = Fixtures.packageRoot.appendingPathComponent("Tests/Fixtures/video/clock-at-1h.mkv").path
        let run = try Self.run(try Self.probeAlone(in: folder), ["video", clip])
        #expect(run.status == 0, "\(run.errors)")
        #expect(run.output.hasPrefix("frame "), "\(run.output) \(run.errors)")
        #expect(Self.loadedNoModuleFile(run), "loaded a module file: \(run.libraries)")
    }
}
