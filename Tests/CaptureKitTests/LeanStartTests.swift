import CaptureKit
import CaptureKitTesting
import Foundation
import Testing

@testable import CaptureVision

/// A lean start (issue #33): reading the codes in one still image loads none of OpenCV's heavy
/// libraries (dnn and objdetect, videoio and FFmpeg, imgcodecs and GDAL), and faces and videos
/// load exactly the module they need, on first use. Each case runs the CaptureProbe helper (a
/// program built on CaptureKit, doing what `cvcam scan IMAGE`, `cvcam faces` and a video input
/// do) with the dynamic loader's own record of every library it maps, at start and by dlopen
/// (LD_DEBUG=files), so nothing is left out that a listing taken at one moment could miss.
@Suite(.serialized) struct LeanStartTests {
    /// Libraries a still image's codes must not bring in: OpenCV's heavy modules, what they pull
    /// in (GDAL for imgcodecs, FFmpeg and GStreamer for videoio, protobuf for dnn) and the
    /// shim's own modules for them.
    static let heavy = [
        "libopencv_dnn.", "libopencv_objdetect.", "libopencv_videoio.", "libopencv_imgcodecs.", "libgdal.",
        "libavformat.", "libavcodec.", "libgstreamer-", "libprotobuf.", "libCVBridgeVideo.", "libCVBridgeObjdetect.",
        "libCVBridgeImgcodecs.",
    ]

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

    @Test(arguments: ["code.png", "code.jpg"])
    func codesInAStillImageLoadNoHeavyLibrary(_ name: String) throws {
        let folder = try TemporaryDirectory()
        let image = try Self.codeImage("lean start", named: name, in: folder)
        let run = try Self.run(try Self.probe(), ["codes", image])
        #expect(run.status == 0, "\(run.errors)")
        #expect(run.output.contains("code lean start"), "the probe read no code: \(run.output) \(run.errors)")
        // The record is complete: ZBar, which reads the code, is in it.
        let recorded = run.loaded("libzbar.")
        #expect(recorded, "no loader record: \(run.libraries)")
        for library in Self.heavy {
            let loaded = run.loaded(library)
            #expect(!loaded, "reading a still image's codes loaded \(library)")
        }
    }

    @Test func facesLoadTheObjdetectModuleAndDNNOnly() throws {
        let models = Fixtures.packageRoot.appendingPathComponent("Models").path
        let run = try Self.run(try Self.probe(), ["faces", Fixtures.faceImage("grace_hopper.jpg"), models])
        #expect(run.status == 0, "\(run.errors)")
        #expect(run.output.contains("faces 1"), "\(run.output) \(run.errors)")
        let needed = run.loaded("libCVBridgeObjdetect.") && run.loaded("libopencv_dnn.")
        #expect(needed, "faces did not load the objdetect module and dnn: \(run.libraries)")
        for library in ["libopencv_videoio.", "libavformat.", "libopencv_imgcodecs.", "libgdal."] {
            let loaded = run.loaded(library)
            #expect(!loaded, "faces in a still image loaded \(library)")
        }
    }

    @Test func aVideoLoadsTheVideoModuleOnly() throws {
        let clip = Fixtures.packageRoot.appendingPathComponent("Tests/Fixtures/video/clock-at-1h.mkv").path
        let run = try Self.run(try Self.probe(), ["video", clip])
        #expect(run.status == 0, "\(run.errors)")
        #expect(run.output.hasPrefix("frame "), "\(run.output) \(run.errors)")
        let needed = run.loaded("libCVBridgeVideo.") && run.loaded("libopencv_videoio.") && run.loaded("libavformat.")
        #expect(needed, "a video did not load the video module, videoio and libavformat: \(run.libraries)")
        for library in ["libopencv_dnn.", "libCVBridgeObjdetect."] {
            let loaded = run.loaded(library)
            #expect(!loaded, "a video loaded \(library)")
        }
    }

    /// A program whose modules are not beside it (nor in ../lib/cvcam) still reads still images,
    /// and a video fails with an error that names the missing file, not a crash.
    @Test func aMissingModuleIsATypedErrorAndStillImagesStillWork() throws {
        let folder = try TemporaryDirectory()
        let alone = folder.url.appendingPathComponent("bin/CaptureProbe")
        try FileManager.default.createDirectory(
            at: alone.deletingLastPathComponent(), withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: try Self.probe(), to: alone)
        let image = try Self.codeImage("alone", named: "code.png", in: folder)
        let codes = try Self.run(alone, ["codes", image])
        #expect(codes.status == 0 && codes.output.contains("code alone"), "\(codes.output) \(codes.errors)")

        let clip = Fixtures.packageRoot.appendingPathComponent("Tests/Fixtures/video/clock-at-1h.mkv").path
        let video = try Self.run(alone, ["video", clip])
        #expect(video.status == 1)
        #expect(video.errors.contains("libCVBridgeVideo.so"), "\(video.errors)")
        #expect(video.errors.contains("is missing"), "\(video.errors)")
        #expect(video.errors.contains(folder.url.appendingPathComponent("lib/cvcam").path), "\(video.errors)")
    }
}
