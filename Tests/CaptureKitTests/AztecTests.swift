import Foundation
import Testing

@testable import CaptureKit
@_spi(Benchmark) @testable import CaptureVision
import CaptureKitTesting

/// Aztec beyond zxing-cpp 1.4's own reader (`AztecCore`, `ScanRun.readAztec`): runes, symbols
/// seen at a steep angle, and payloads the symbol cannot hold. Generated symbols only
/// (Tests/Fixtures/codes and Tests/Fixtures/barcodes, made by Tools/make-code-fixtures).
@Suite struct AztecTests {
    static func fixture(_ path: String) throws -> PixelBuffer {
        try QRTestCorpus.photo(at: Fixtures.packageRoot.appendingPathComponent(path).path)
    }

    /// zxing-cpp 1.4 alone, the 2-D read `CodeDetector` starts from.
    static func zxingAlone(_ frame: PixelBuffer) throws -> [ScannedSymbol] {
        try ZXingReader().read(try CodeImaging.gray(frame), hints: .defaults([.aztec]))
    }

    /// The Aztec fixture (4 px modules) printed with ink spread: every dark area grown by a
    /// pixel on each side, so the bullseye's dark rings are 6 px and its light ones 2 px (as in
    /// zxing-cpp's sample `az-thick.png`), past the ring checks. The still is looked at again
    /// with its dark shrunk by a pixel (`Passes.inkSpread`).
    @Test func aSymbolPrintedWithInkSpreadIsReadWithItsDarkShrunk() throws {
        let clean = try CodeImaging.gray(try Self.fixture("Tests/Fixtures/codes/aztec.png"))
        let spread = try CodeImaging.inverted(try CodeImaging.darkShrunk(try CodeImaging.inverted(clean)))
        #expect(try Self.zxingAlone(spread).isEmpty, "zxing-cpp 1.4 reads it: the test shows nothing")
        var without = CodeDetector.Passes()
        without.inkSpread = false
        #expect(try CodeDetector(metadataObjectTypes: [.aztec], passes: without).detections(in: spread).isEmpty)
        let codes = try CodeDetector(metadataObjectTypes: [.aztec]).detections(in: spread)
        #expect(codes.map(\.stringValue) == ["cvcam Aztec 1"])
    }

    @Test func darkShrinksByAPixelOnEverySide() throws {
        let image = try PixelBuffer(width: 7, height: 7, pixelFormat: .gray)
        let p = image.baseAddress.assumingMemoryBound(to: UInt8.self)
        for y in 0..<7 { for x in 0..<7 { p[y * image.bytesPerRow + x] = (1...5).contains(x) && (1...5).contains(y) ? 0 : 255 } }
        let shrunk = try CodeImaging.darkShrunk(image)
        let q = shrunk.baseAddress.assumingMemoryBound(to: UInt8.self)
        let dark = (0..<49).filter { q[($0 / 7) * shrunk.bytesPerRow + $0 % 7] == 0 }.map { [$0 % 7, $0 / 7] }
        #expect(dark == [[2, 2], [3, 2], [4, 2], [2, 3], [3, 3], [4, 3], [2, 4], [3, 4], [4, 4]])
    }

    @Test func aRuneIsReadFromItsModeMessage() throws {
        let frame = try Self.fixture("Tests/Fixtures/barcodes/aztec-rune-223.png")
        #expect(try Self.zxingAlone(frame).isEmpty, "zxing-cpp 1.4 reads no runes")
        let codes = try CodeDetector(metadataObjectTypes: [.aztec]).detections(in: frame)
        #expect(codes.map(\.type) == [.aztec])
        #expect(codes.map(\.stringValue) == ["223"])
        #expect(codes.first?.payload == Array("223".utf8))
    }

    /// 982 NUL bytes: zxing-cpp 1.4 returns 1,013, reading past the symbol's last data bit; that
    /// read is refused and cvcam's own decoder (`AztecData`) reads the symbol.
    @Test func aPayloadTheSymbolCannotHoldIsRefusedAndTheSymbolDecodedByCvcam() throws {
        let frame = try Self.fixture("Tests/Fixtures/barcodes/aztec-padding.png")
        #expect(try Self.zxingAlone(frame).allSatisfy { $0.bytes.count != 982 }, "zxing-cpp 1.4 misreads it")
        var without = CodeDetector.Passes()
        without.aztecData = false
        #expect(try CodeDetector(metadataObjectTypes: [.aztec], passes: without).detections(in: frame).isEmpty)
        let codes = try CodeDetector(metadataObjectTypes: [.aztec]).detections(in: frame)
        #expect(codes.map(\.payload) == [[UInt8](repeating: 0, count: 982)], "\(codes.map(\.payload.count))")
        #expect(codes.first?.stringValue == nil, "NUL bytes are binary")
    }

    @Test func payloadsAreCheckedAgainstTheDataBitsTheyNeed() {
        // Bytes only a binary shift encodes take 8 bits each; text can take as few as 2.5.
        #expect(!AztecCore.payloadFits([UInt8](repeating: 0, count: 1013), dataBits: 7913))
        #expect(AztecCore.payloadFits([UInt8](repeating: 0, count: 982), dataBits: 7913))
        #expect(AztecCore.payloadFits(Array("hello".utf8), dataBits: 25))
        #expect(AztecCore.payloadFits(Array(". . . .".utf8), dataBits: 20))
        #expect(!AztecCore.payloadFits(Array("é".utf8), dataBits: 15))
    }

    @Test func theModeMessageCorrectsUpToHalfItsCheckWords() {
        // Compact: 2 data words, 5 check words (corrects 2); full range: 4 and 6 (corrects 3).
        let compact = [9, 6], full = [3, 0, 12, 7]
        let c = compact + ReedSolomon.aztec4.checkWords(compact, count: 5)
        let f = full + ReedSolomon.aztec4.checkWords(full, count: 6)
        #expect(AztecCore.modeValue(c, dataWords: 2) == 0x96)
        #expect(AztecCore.modeValue(f, dataWords: 4) == 0x30C7)
        var c2 = c
        c2[0] ^= 5
        c2[4] ^= 1
        #expect(AztecCore.modeValue(c2, dataWords: 2) == 0x96)
        var c3 = c2
        c3[6] ^= 8
        #expect(AztecCore.modeValue(c3, dataWords: 2) == nil)
        var f3 = f
        f3[1] ^= 2
        f3[5] ^= 15
        f3[9] ^= 4
        #expect(AztecCore.modeValue(f3, dataWords: 4) == 0x30C7)
    }

    /// `aztec.png` (19×19 modules, 4 px each) turned by 20° and tilted `tilt`° away about a
    /// vertical axis, projected with a focal length of the frame's width (640×480).
    static func tilted(_ tilt: Double) throws -> PixelBuffer {
        let source = try CodeImaging.gray(try fixture("Tests/Fixtures/codes/aztec.png"))
        // The symbol spans 76 px in the middle of the 320×240 fixture.
        let symbol = [CGPoint(x: 122, y: 82), CGPoint(x: 198, y: 82), CGPoint(x: 198, y: 158), CGPoint(x: 122, y: 158)]
        let width = 640.0, side = 220.0, turn = 20 * Double.pi / 180, t = tilt * Double.pi / 180
        let corners = [(-0.5, -0.5), (0.5, -0.5), (0.5, 0.5), (-0.5, 0.5)].map { (u, v) -> CGPoint in
            var x = u * side * cos(turn) - v * side * sin(turn)
            let y = u * side * sin(turn) + v * side * cos(turn)
            let depth = x * sin(t)
            x *= cos(t)
            let k = width / (width + depth)
            return CGPoint(x: 320 + x * k, y: 240 + y * k)
        }
        let frame = try PixelBuffer(width: 640, height: 480, pixelFormat: .gray)
        memset(frame.baseAddress, 170, frame.bytesPerRow * frame.height)
        try CodeImaging.warp(source, into: frame, homography: try CodeImaging.homography(from: symbol, to: corners))
        return frame
    }

    @Test(arguments: [35.0, 45.0, 55.0]) func aSteeplyTiltedSymbolIsRectifiedFromItsBullseye(tilt: Double) throws {
        let frame = try Self.tilted(tilt)
        // The frame and its double (the reads before the rescue): zxing-cpp 1.4 loses the symbol.
        let double = try CodeImaging.resized(try CodeImaging.gray(frame), width: 1280, height: 960, interpolation: Interpolation.linear)
        #expect(try Self.zxingAlone(frame).isEmpty && Self.zxingAlone(double).isEmpty, "\(tilt)°")
        let codes = try CodeDetector(metadataObjectTypes: [.aztec]).detections(in: frame)
        #expect(codes.map(\.stringValue) == ["cvcam Aztec 1"])
    }

    /// `ScanRun.moduleValues` samples each module at its centre: on an upright image whose
    /// pixels hold three times their column (or row), module i's value is three times its
    /// centre, (q + i + 0.5)·s with a pixel's centre at its integer coordinate (the warp's).
    /// The pixels one before sat a fifth of a module off at 5 px per module.
    @Test func modulesAreSampledAtTheirCentres() throws {
        let dim = 9, q = ScanRun.aztecQuietZone, s = 5.0
        let side = Int(Double(dim + 2 * q) * s)
        for alongRows in [true, false] {
            let image = try PixelBuffer(width: side, height: side, pixelFormat: .gray)
            let p = image.baseAddress.assumingMemoryBound(to: UInt8.self)
            for y in 0..<side {
                for x in 0..<side { p[y * image.bytesPerRow + x] = UInt8(3 * (alongRows ? x : y)) }
            }
            let values = ScanRun.moduleValues(image, module: s, dimension: dim, quiet: q)
            for j in 0..<dim {
                for i in 0..<dim {
                    let centre = (Double(q + (alongRows ? i : j)) + 0.5) * s
                    #expect(values[j * dim + i] == 3 * centre, "module (\(i), \(j))")
                }
            }
        }
    }
}
