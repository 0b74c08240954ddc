import Foundation
import Testing

@testable import CaptureKit
@_spi(Benchmark) @testable import CaptureVision
import CaptureKitTesting

/// A UPC-E or EAN-8 read over part of a longer symbol's bars is dropped (`RetailFragment`,
/// `Passes.retailFragmentCheck`); one with its quiet zones stays. ZBar's reads are stated, as
/// ZBar makes them (points at the symbol's ends on each scan line); the fragments this was
/// built for are photos recompressed by zxing-cpp's sample folders (`bench-codes --codes-folder`).
@Suite struct RetailFragmentTests {
    /// A UPC-E symbol of `digits` (number system 0, six digits, check digit), 3 px per module,
    /// bars 60 px tall, centred on a white 400x160 GRAY frame; and where it starts.
    static func upce(_ digits: String) throws -> (frame: PixelBuffer, x0: Int) {
        // Number system 0: the check digit picks each digit's parity (E: G codes, O: L codes).
        let parity = ["EEEOOO", "EEOEOO", "EEOOEO", "EEOOOE", "EOEEOO", "EOOEEO", "EOOOEE", "EOEOEO", "EOEOOE", "EOOEOE"]
        let d = digits.compactMap { $0.wholeNumberValue }
        var bits = "101"
        for (i, p) in parity[d[7]].enumerated() {
            bits += p == "E" ? DoubtfulLinearReadTests.g[d[i + 1]] : DoubtfulLinearReadTests.l[d[i + 1]]
        }
        bits += "010101"
        return try DoubtfulLinearReadTests.drawn(bits, module: 3)
    }

    /// ZBar's UPC-E read of `number` spanning `x0...x1`, decoded on six rows scanned in turn
    /// left to right and right to left.
    static func read(_ number: String, from x0: Int, to x1: Int) -> ScannedSymbol {
        let points = (0..<6).map { k in CGPoint(x: k % 2 == 0 ? x1 : x0, y: 60 + 8 * k) }
        return ScannedSymbol(type: .upce, bytes: Array(number.utf8), points: points, quality: 6, orientation: 0)
    }

    @Test func aUPCEReadOverTheFirstHalfOfAUPCAIsAFragment() throws {
        // UPC-A 036000291452 as its EAN-13 form; the UPC-E read spans its first 51 modules.
        let frame = try DoubtfulLinearReadTests.ean13("0036000291452")
        let x0 = (400 - 95 * 3) / 2
        #expect(RetailFragment.isFragment(Self.read("01234565", from: x0, to: x0 + 51 * 3), in: frame))
        // Its points all at the fragment's right end, inside the UPC-A's bars.
        var oneEnd = Self.read("01234565", from: x0, to: x0 + 51 * 3)
        oneEnd.points = oneEnd.points.map { CGPoint(x: Double(x0 + 51 * 3), y: $0.y) }
        #expect(RetailFragment.isFragment(oneEnd, in: frame))
        // The same read's span reaching to the UPC-A's end on the right.
        #expect(RetailFragment.isFragment(Self.read("01234565", from: x0 + 44 * 3, to: x0 + 95 * 3), in: frame))
    }

    @Test func aUPCEWithItsQuietZonesStaysAndTheDetectorKeepsIt() throws {
        let (frame, x0) = try Self.upce("01234565")
        let read = Self.read("01234565", from: x0, to: x0 + 51 * 3)
        #expect(!RetailFragment.isFragment(read, in: frame))
        // A camera's sensor noise in the quiet zones makes no bars there.
        let (noisy, _) = try Self.upce("01234565")
        try CodeImaging.addNoise(noisy, seed: 5, standardDeviation: 8)
        #expect(!RetailFragment.isFragment(read, in: noisy))
        // Nor does a read whose points all lie at one end (lines scanned one way).
        var oneEnd = read
        oneEnd.points = oneEnd.points.map { CGPoint(x: Double(x0), y: $0.y) }
        #expect(!RetailFragment.isFragment(oneEnd, in: noisy))
        // End to end: ZBar's own read of the drawn symbol survives the check.
        let detector = try CodeDetector(metadataObjectTypes: [.upce, .ean13])
        #expect(try detector.detections(in: frame).map { String(decoding: $0.payload, as: UTF8.self) } == ["01234565"])
    }

    @Test func theDetectorDropsAFragmentAndKeepsItWithTheCheckOff() throws {
        let frame = try DoubtfulLinearReadTests.ean13("0036000291452")
        let x0 = (400 - 95 * 3) / 2
        for on in [true, false] {
            var passes = CodeDetector.Passes()
            passes.retailFragmentCheck = on
            var run = ScanRun(scanner: try ZBarScanner(), zxing: try ZXingReader(), passes: passes, types: [.upce])
            run.found = [Self.read("01234565", from: x0, to: x0 + 51 * 3)]
            run.dropRetailFragments(frame)
            #expect(run.found.isEmpty == on)
        }
    }
}
