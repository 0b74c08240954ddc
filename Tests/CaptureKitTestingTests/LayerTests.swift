import Foundation
import Testing

/// The layering as a user of the package sees it, through `Tools/check-layers`: a client of
/// CaptureKit alone cannot name `QRTestCorpus` (nor the `package` seam `CodeImaging`); a client
/// of CaptureKitTesting can. The client's build folder is kept, so after the first run (about a
/// minute of compiling, which Tools/test does before the suite) this takes seconds.
@Suite struct LayerTests {
    /// Tests/CaptureKitTestingTests/LayerTests.swift → the package root.
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    @Test(.timeLimit(.minutes(10))) func theCorpusIsOutOfCaptureKitsSight() throws {
        let p = Process()
        p.executableURL = Self.packageRoot.appendingPathComponent("Tools/check-layers")
        let out = Pipe()
        p.standardOutput = out
        p.standardError = out
        try p.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        #expect(p.terminationStatus == 0, "Tools/check-layers: \(text)")
        #expect(text.contains("cannot see QRTestCorpus or CodeImaging"))
    }
}
