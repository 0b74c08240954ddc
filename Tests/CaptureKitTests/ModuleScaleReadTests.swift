import Foundation
import Testing

@testable import CaptureKit
@_spi(Benchmark) @testable import CaptureVision
import CaptureKitTesting

/// zxing-cpp read again at the scale a code's modules need (`ScanRun.readDoubledSmallImage`,
/// `ScanRun.readWhereLargeFinders`): a small still whose soft 3-px modules its binarizer loses,
/// and a frame whose modules are wider than its 40-pixel neighbourhoods. Generated codes; the
/// real Micro QR images these passes were built for are measured by `bench-codes`.
@Suite struct ModuleScaleReadTests {
    /// A QR code of `version` and `module` px in a light `width`×`height` frame (nil: the code
    /// and a margin), blurred by `sigma`, with a camera's sensor noise (σ 3).
    static func softCode(
        version: Int32, module: Int, width: Int? = nil, height: Int? = nil, sigma: Double
    ) throws -> (frame: PixelBuffer, payload: [UInt8]) {
        let payload = Array("cvcam \(version)".utf8)
        let symbol = try CodeImaging.gray(try QRCodeImage.make(payload: payload, version: version, moduleSize: module))
        let w = width ?? symbol.width + 40, h = height ?? symbol.height + 30
        let frame = try PixelBuffer(width: w, height: h, pixelFormat: .gray)
        try Imaging.fill(frame, x: 0, y: 0, width: w, height: h, red: 190, green: 190, blue: 190, "test frame")
        let (from, to) = Placement.turned(
            CGRect(x: 0, y: 0, width: symbol.width, height: symbol.height), scale: 1, degrees: 0,
            centre: CGPoint(x: w / 2, y: h / 2))
        try CodeImaging.warp(symbol, into: frame, homography: try CodeImaging.homography(from: from, to: to))
        let soft = try CodeImaging.blurred(frame, sigma: sigma)
        try CodeImaging.addNoise(soft, seed: 7, standardDeviation: 3)
        return (soft, payload)
    }

    static func run(_ passes: CodeDetector.Passes = CodeDetector.Passes()) throws -> ScanRun {
        ScanRun(scanner: try ZBarScanner(), zxing: try ZXingReader(), passes: passes, types: [.qr, .microQR])
    }

    @Test func aSmallStillsSoftModulesAreReadAtTwiceItsSize() throws {
        let (frame, payload) = try Self.softCode(version: 2, module: 3, sigma: 1.2)
        #expect(frame.width < ScanRun.gateSize)
        var plain = try Self.run()
        _ = try plain.zxingRead(frame, mapping: nil, hints: .defaults([.qr, .microQR]))
        #expect(!plain.found.contains { $0.bytes == payload })
        var doubled = try Self.run()
        try doubled.readDoubledSmallImage(frame)
        let read = try #require(doubled.found.first { $0.bytes == payload })
        // Corners in this image's pixels, not the doubled image's.
        #expect(read.points.allSatisfy { $0.x >= 0 && $0.x <= Double(frame.width) && $0.y >= 0 && $0.y <= Double(frame.height) })
        var passes = CodeDetector.Passes()
        passes.doubledSmallRead = false
        var off = try Self.run(passes)
        try off.readDoubledSmallImage(frame)
        #expect(off.found.isEmpty && off.counts.zxingReads == 0)
    }

    @Test func aSmallStillWithoutAFinderIsNotReadAgain() throws {
        let frame = try QRTestCorpus.resized(try QRTestCorpus.background(width: 320, height: 240, seed: 11), width: 200, height: 150)
        var run = try Self.run()
        try run.readDoubledSmallImage(try CodeImaging.gray(frame))
        #expect(run.counts.zxingReads == 0)
    }

    @Test func modulesWiderThanTheBinarizersNeighbourhoodAreReadWhereTheirFinderWasSeen() throws {
        let (frame, payload) = try Self.softCode(version: 1, module: 22, width: 1280, height: 960, sigma: 12)
        var plain = try Self.run()
        _ = try plain.zxingRead(frame, mapping: nil, hints: .defaults([.qr, .microQR]))
        #expect(!plain.found.contains { $0.bytes == payload })
        var run = try Self.run()
        #expect(try run.anyFinder(frame))
        _ = try run.quarterSizeFinders(try run.halfImage(frame))
        try run.readWhereLargeFinders(frame)
        let read = try #require(run.found.first { $0.bytes == payload })
        // Corners in the frame's pixels: around its centre, the code 462 px wide.
        let box = DeviceSpace.boundingBox(of: read.points)
        #expect(abs(box.midX - 640) < 40 && abs(box.midY - 480) < 40 && box.width > 350)
        var passes = CodeDetector.Passes()
        passes.largeModuleRead = false
        var off = try Self.run(passes)
        _ = try off.anyFinder(frame)
        try off.readWhereLargeFinders(frame)
        #expect(off.found.isEmpty)
    }

    @Test func aFrameWhoseLooksSawNoFinderIsNotReadAgain() throws {
        let frame = try CodeImaging.gray(try QRTestCorpus.background(width: 640, height: 480, seed: 5))
        var run = try Self.run()
        #expect(try !run.anyFinder(frame))
        try run.readWhereLargeFinders(frame)
        #expect(run.counts.zxingReads == 0)
    }
}
