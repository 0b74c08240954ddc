import CVBridge
import Foundation
import Testing

@testable import CaptureKit
@_spi(Benchmark) @testable import CaptureVision
import CaptureKitTesting

/// What keeps a frame with a QR code from opening reads of the other 2-D types: cues inside a
/// code already read (`SymbolCues.outside`) and Data Matrix ladders made of sensor noise
/// (`SymbolCues.withoutFaintEdges`) open none; and ZBar's scan of a finder triple's upright area
/// every second line (`ScanRun.uprightLineStep`).
@Suite struct ReadCodeCueTests {
    @Test func aFrameWithAReadQRCodeOpensNoOtherRead() throws {
        // Version 7 at 2 px per module: its modules make a Data Matrix ladder inside the code
        // (upright), and this frame's noise one on the plain surface below it. Before either
        // filter, each frame opened a read of the whole frame for Data Matrix.
        let detector = try CodeDetector(metadataObjectTypes: CodeDetector.twoDimensionalTypes)
        for angle in [0.0, 3, 8, 30, 45] {
            let frame = try QRTestCorpus.turnedCode(version: 7, module: 2, degrees: angle, seed: 72).frame
            let before = detector.passCounts
            let codes = try detector.detections(in: frame)
            let after = detector.passCounts
            #expect(codes.map(\.type) == [.qr], "\(angle)°")
            #expect(after.dataMatrixCues == before.dataMatrixCues, "\(angle)°")
            #expect(after.aztecCues == before.aztecCues && after.pdf417Cues == before.pdf417Cues, "\(angle)°")
        }
    }

    @Test(arguments: SymbolCueTests.cuedFixtures)
    func aSymbolBesideAReadQRCodeIsReadToo(_ path: String, _ type: MetadataObjectType, _ text: String) throws {
        // The QR run reads the code; the other type's cues still open its read. The Data Matrix
        // turned 5° shows its cue only to the gate's own look (offset 15): skipping that look in
        // frames whose QR code was read saved 0.08 ms a frame with a code and lost this read.
        let detector = try CodeDetector(metadataObjectTypes: CodeDetector.twoDimensionalTypes)
        let qr = try CodeImaging.gray(try QRCodeImage.make(payload: Array("BESIDE-1".utf8), moduleSize: 3))
        for angle in [0.0, 5] {
            let frame = try SymbolCueTests.placed(path, module: 3, angle: angle, centre: CGPoint(x: 190, y: 240), seed: 5)
            try CodeImaging.warp(
                qr, into: frame, homography: try CodeImaging.homography(
                    from: [CGPoint(x: 0, y: 0), CGPoint(x: qr.width, y: 0), CGPoint(x: qr.width, y: qr.height), CGPoint(x: 0, y: qr.height)],
                    to: [CGPoint(x: 440, y: 160), CGPoint(x: 440 + qr.width, y: 160), CGPoint(x: 440 + qr.width, y: 160 + qr.height),
                        CGPoint(x: 440, y: 160 + qr.height)]))
            let codes = try detector.detections(in: frame)
            #expect(codes.contains { $0.type == .qr && $0.stringValue == "BESIDE-1" }, "QR beside \(type) at \(angle)°")
            #expect(codes.contains { $0.type == type && $0.stringValue == text }, "\(type) at \(angle)°")
        }
    }

    @Test func cuesInsideACodeAreDropped() {
        var cues = SymbolCues()
        cues.dataMatrix = [CGRect(x: 40, y: 50, width: 20, height: 0), CGRect(x: 150, y: 50, width: 20, height: 0)]
        cues.pdf417 = [CGPoint(x: 50, y: 60), CGPoint(x: 10, y: 10)]
        cues.bullseyes = [FinderEvidence.Finder(centre: CGPoint(x: 70, y: 70), module: 2, dark: true)]
        // A square turned 45° about (60, 60): (10, 10) lies in its bounding box, not in it.
        let turned = [CGPoint(x: 60, y: 0), CGPoint(x: 120, y: 60), CGPoint(x: 60, y: 120), CGPoint(x: 0, y: 60)]
        for code in [turned, turned.reversed()] {
            let kept = cues.outside([code])
            #expect(kept.dataMatrix == [CGRect(x: 150, y: 50, width: 20, height: 0)])
            #expect(kept.pdf417 == [CGPoint(x: 10, y: 10)])
            #expect(kept.bullseyes.isEmpty)
        }
        #expect(cues.outside([]).dataMatrix.count == 2)
    }

    @Test func faintLaddersAreDroppedAndPrintedOnesKept() throws {
        // Two ladders of 2-px modules on row 10: one of 6 levels (noise's size), one of 60.
        let gray = try PixelBuffer(width: 100, height: 20, pixelFormat: .gray)
        try Imaging.fill(gray, x: 0, y: 0, width: 100, height: 20, red: 128, green: 128, blue: 128, "test image")
        let p = gray.baseAddress.assumingMemoryBound(to: UInt8.self)
        for x in 0..<40 { p[10 * gray.bytesPerRow + x] = (x / 2) % 2 == 0 ? 125 : 131 }
        for x in 50..<90 { p[10 * gray.bytesPerRow + x] = (x / 2) % 2 == 0 ? 98 : 158 }
        var cues = SymbolCues()
        cues.dataMatrix = [CGRect(x: 0, y: 10, width: 40, height: 0), CGRect(x: 50, y: 10, width: 40, height: 0)]
        let kept = cues.withoutFaintEdges(in: gray, minimum: ScanRun.edgeContrast)
        #expect(kept.dataMatrix == [CGRect(x: 50, y: 10, width: 40, height: 0)])
    }

    @Test func uprightAreasAreReadEverySecondLineWithZXingBehind() throws {
        // The upright images `scanUpright` makes: modules of `Passes.areaModuleSize` px, turned
        // up to 3° by the finders' error. ZBar every second line reads most; zxing-cpp, which
        // `attempt` asks next, reads the rest.
        let scanner = try ZBarScanner()
        scanner.enable([.qr])
        #expect(scanner.setLineStep(ScanRun.uprightLineStep))
        let zxing = try ZXingReader()
        var hints = ZXingHints.defaults([.qr])
        hints.tryRotate = false
        hints.tryDownscale = false
        let size = CodeDetector.Passes().areaModuleSize
        var images = 0, zbarRead = 0
        for version: Int32 in Array(1...15) {
            for angle in [0.0, 1, 2, 3] {
                let payload = Array("upright \(version) \(angle)".utf8)
                let symbol = try CodeImaging.gray(try QRCodeImage.make(payload: payload, version: version))
                let side = Int((Double(symbol.width) * size).rounded(.up))
                let image = try PixelBuffer(width: side, height: side, pixelFormat: .gray)
                let (from, to) = Placement.turned(
                    CGRect(x: 0, y: 0, width: symbol.width, height: symbol.height), scale: size, degrees: angle,
                    centre: CGPoint(x: Double(side) / 2, y: Double(side) / 2))
                try CodeImaging.warp(
                    symbol, into: image, homography: try CodeImaging.homography(from: from, to: to),
                    interpolation: Int32(CVB_INTER_LINEAR), border: Int32(CVB_BORDER_REPLICATE))
                images += 1
                if try scanner.scan(image).map(\.bytes) == [payload] {
                    zbarRead += 1
                } else {
                    #expect(try zxing.read(image, hints: hints).map(\.bytes) == [payload], "version \(version), \(angle)°")
                }
            }
        }
        #expect(zbarRead * 10 >= images * 9, "ZBar every second line read \(zbarRead) of \(images)")
    }
}
