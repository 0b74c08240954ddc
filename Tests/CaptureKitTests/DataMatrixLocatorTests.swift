import Foundation
import Testing

@testable import CaptureKit
@_spi(Benchmark) @testable import CaptureVision
import CaptureKitTesting

/// Data Matrix symbols zxing-cpp 1.4's detector does not find, read through cvcam's own
/// locator (`DataMatrixLocator`, `ScanRun.readLocatedDataMatrix`). Generated from the fixture
/// Tests/Fixtures/codes/datamatrix.png (Tools/make-code-fixtures): a 12×26 symbol, 4 px modules.
@Suite struct DataMatrixLocatorTests {
    static let text = "cvcam Data Matrix 1"

    /// The fixture's symbol stretched unevenly along its rows (modules from 2.4 to 6.7 px wide,
    /// as a label wrapped round a curve shows them), its rows bent by `bend` pixels at the
    /// middle, with a dark speck in the image's corner (as in the real pictures zxing-cpp 1.4
    /// misses).
    /// `inked`: (row, column) modules of the symbol painted dark first, as spread ink closes a
    /// light module.
    static func distorted(bend: Double, speck: Bool = true, stretch: Double = 0.8, inked: [(row: Int, column: Int)] = []) throws -> PixelBuffer {
        let source = try CodeImaging.gray(
            try QRTestCorpus.photo(at: Fixtures.packageRoot.appendingPathComponent("Tests/Fixtures/codes/datamatrix.png").path))
        // The symbol spans x 108..<212 and y 96..<144 of the 320×240 fixture.
        let sx = 108.0, sy = 96.0, sw = 104.0, sh = 48.0
        for (row, column) in inked {
            let s = source.baseAddress.assumingMemoryBound(to: UInt8.self)
            for y in 0..<4 { for x in 0..<4 { s[(96 + 4 * row + y) * source.bytesPerRow + 108 + 4 * column + x] = 0 } }
        }
        let width = 200, height = 130, left = 30.0, top = 30.0, w = 140.0, h = 72.0
        let out = try PixelBuffer(width: width, height: height, pixelFormat: .gray)
        let src = source.baseAddress.assumingMemoryBound(to: UInt8.self)
        let dst = out.baseAddress.assumingMemoryBound(to: UInt8.self)
        for y in 0..<height {
            for x in 0..<width {
                let u = (Double(x) + 0.5 - left) / w
                let v = (Double(y) + 0.5 - top - bend * sin(Double.pi * min(max(u, 0), 1))) / h
                var value: UInt8 = 255
                if u >= 0, u < 1, v >= 0, v < 1 {
                    let px = Int(sx + sw * pow(u, stretch)), py = Int(sy + sh * v)
                    value = src[py * source.bytesPerRow + px]
                }
                dst[y * out.bytesPerRow + x] = value
            }
        }
        if speck {
            for y in 1..<4 { for x in 1..<4 { dst[y * out.bytesPerRow + x] = 0 } }
        }
        return out
    }

    static func read(_ frame: PixelBuffer, locator: Bool) throws -> [CodeDetection] {
        var passes = CodeDetector.Passes()
        passes.dataMatrixLocator = locator
        return try CodeDetector(metadataObjectTypes: [.dataMatrix], passes: passes).detections(in: frame)
    }

    @Test(arguments: [0.0, 2.0]) func anUnevenlyStretchedSymbolIsReadThroughTheLocator(_ bend: Double) throws {
        let frame = try Self.distorted(bend: bend)
        #expect(try Self.read(frame, locator: false).isEmpty, "zxing-cpp 1.4 alone reads it: the test shows nothing")
        let codes = try Self.read(frame, locator: true)
        #expect(codes.map(\.payload) == [Array(Self.text.utf8)])
        #expect(codes.first?.type == .dataMatrix)
        // The corners are the symbol's, clockwise from its top-left (device space of 200×130).
        if let corners = codes.first?.corners, corners.count == 4 {
            #expect(abs(corners[0].x * 200 - 30) < 3 && abs(corners[0].y * 130 - 30) < 3, "\(corners)")
            #expect(abs(corners[2].x * 200 - 170) < 3 && abs(corners[2].y * 130 - 102) < 3, "\(corners)")
        }
    }

    /// `ScanRun.readDataMatrixAroundEdges`: rows a few pixels apart cross a turned timing edge for
    /// different lengths; a crop sized by a short crossing cuts the symbol off, and the longer
    /// crossing, whose middle lies in that crop, is still tried (a turned symbol in
    /// `bench-codes --other-types` was missed so).
    @Test func aLongerCrossingOfAnEdgeTriedIsTriedToo() throws {
        let gray = try SymbolCueTests.placed(
            "Tests/Fixtures/codes/datamatrix.png", module: 3, angle: 0, centre: CGPoint(x: 200, y: 280), seed: 3)
        let long = try #require(try Self.longestEdge(in: gray))
        let short = CGRect(x: long.minX, y: long.minY, width: (0.4 * long.width).rounded(), height: 0)
        #expect(try Self.readAround([short], in: gray).isEmpty)
        #expect(try Self.readAround([short, long], in: gray) == [Self.text])
    }

    /// The longest Data Matrix timing edge the finder looks of one frame see in `gray`.
    static func longestEdge(in gray: PixelBuffer) throws -> CGRect? {
        var cued = ScanRun(scanner: try ZBarScanner(), zxing: try ZXingReader(), passes: CodeDetector.Passes(), types: [.dataMatrix])
        cued.looks.cueKinds = [.dataMatrix]
        _ = try cued.cuesSeen(gray)
        return cued.looks.cues.dataMatrix.max { $0.width < $1.width }
    }

    /// What `ScanRun.readDataMatrixAroundEdges` reads in `gray` around `edges` (the cues' edges).
    static func readAround(_ edges: [CGRect], in gray: PixelBuffer) throws -> [String] {
        var run = ScanRun(scanner: try ZBarScanner(), zxing: try ZXingReader(), passes: CodeDetector.Passes(), types: [.dataMatrix])
        run.looks.cues.dataMatrix = edges
        try run.readDataMatrixAroundEdges(gray)
        return run.found.compactMap(\.text)
    }

    /// The first crop around a timing edge reaches two crossing lengths along the edge each way
    /// from its middle: a row crosses a turned symbol's edge for part of its length (from the
    /// L's arm here, 45 % of it), and a crop of one and a half each way cut off the far end
    /// (faint symbols turned 5° in `bench-codes --other-types`, seeds 1–6: 110 → 120 of 216).
    @Test func aCrossingOfPartOfAnEdgeGetsACropOfTheWholeSymbol() throws {
        let gray = try SymbolCueTests.placed(
            "Tests/Fixtures/codes/datamatrix.png", module: 3, angle: 0, centre: CGPoint(x: 300, y: 240), seed: 7)
        let long = try #require(try Self.longestEdge(in: gray))
        // The timing edge whole: 26 modules of 3 px, from the L's arm.
        #expect(abs(long.width - 78) <= 3, "\(long)")
        let part = CGRect(x: long.minX, y: long.minY, width: (0.45 * long.width).rounded(), height: 0)
        #expect(try Self.readAround([part], in: gray) == [Self.text])
    }

    /// Spread ink closing a light module of the top timing row (the 14th, or the 2nd): the row
    /// counts 24 modules, the right column 12, no Data Matrix size. The row is counted again
    /// against the sizes of 12 rows (26 columns fit its runs), and the clean image is drawn
    /// with the timing row as the standard draws it (zxing-cpp's pure reader takes the module
    /// size from the top-left corner's run, three modules long when the 2nd is closed).
    /// zxing-cpp's sample `#794.png` so.
    @Test(arguments: [(2.0, 0.8, 13), (3.0, 1.0, 1)]) func aTimingModuleClosedByInkIsCountedAgain(
        _ bend: Double, _ stretch: Double, _ column: Int
    ) throws {
        let frame = try Self.distorted(bend: bend, stretch: stretch, inked: [(0, column)])
        #expect(try Self.read(frame, locator: false).isEmpty, "zxing-cpp 1.4 alone reads it: the test shows nothing")
        #expect(try DataMatrixLocator.locate(frame).map { [$0.rows, $0.columns] } == [[12, 26]])
        #expect(try Self.read(frame, locator: true).map(\.payload) == [Array(Self.text.utf8)])
    }

    @Test func runsAreCountedAgainOnlyWhereTheyFitTheSize() {
        typealias Run = DataMatrixLocator.Run
        // Ten modules of 10 px whose second and third light ones were closed: runs of 30, 10,
        // 30... (dark 0..<30 is three modules).
        let merged = [Run(start: 0, end: 30), Run(start: 30, end: 40), Run(start: 40, end: 70), Run(start: 70, end: 80),
            Run(start: 80, end: 90), Run(start: 90, end: 100)]
        let centres = DataMatrixLocator.regridded(merged, count: 10)
        #expect(centres.map { $0.map { ($0 * 10).rounded() / 10 } } == [5, 15, 25, 35, 45, 55, 65, 75, 85, 95])
        // An even number of modules in one run cannot be a lost module of the other colour.
        #expect(DataMatrixLocator.regridded([Run(start: 0, end: 20), Run(start: 20, end: 30)], count: 3) == nil)
        // Not adding up.
        #expect(DataMatrixLocator.regridded(merged, count: 12) == nil)
    }

    /// The fixture with its L's bottom arm (and every row) bowed by 4 px at the middle: no line
    /// holds the arm's edge within a pixel (zxing-cpp's sample `dm-2x2-a.webp` bows 3–5 px), a
    /// gentle curve does, and the chord through its ends gives the corners.
    @Test func aBowedSolidSideIsStillTheL() throws {
        let frame = try Self.distorted(bend: 4)
        #expect(try Self.read(frame, locator: false).isEmpty, "zxing-cpp 1.4 alone reads it: the test shows nothing")
        #expect(try DataMatrixLocator.locate(frame).map { [$0.rows, $0.columns] } == [[12, 26]])
        #expect(try Self.read(frame, locator: true).map(\.payload) == [Array(Self.text.utf8)])
    }

    /// Which sides are the L and which the timing sides: a solid side by the larger share a line
    /// or a gentle curve holds, a timing side by the line's share at most 75 % (a curve may hold
    /// more of a straight timing side's points: a symbol turned 5° in `bench-codes
    /// --other-types` lost its timing side when the curve's share was the bound).
    @Test func aTimingSideIsToldByItsLinesShare() {
        typealias Side = DataMatrixLocator.Side
        let v = DataMatrixLocator.Vector(dx: 1, dy: 0)
        func side(_ x: Double, _ y: Double, _ support: Double, _ bent: Double) -> Side {
            Side(point: CGPoint(x: x, y: y), direction: v, support: support, bentSupport: bent)
        }
        // Clockwise from the top-left: top and right timing, bottom and left solid (the left
        // one bowed: a line holds 20 %, a curve 93 %).
        let sides = [side(0, 0, 0.5, 0.78), side(100, 0, 0.5, 0.5), side(100, 100, 1, 1), side(0, 100, 0.2, 0.93)]
        #expect(DataMatrixLocator.uprightCorners(sides) == [CGPoint(x: 0, y: 0), CGPoint(x: 100, y: 0), CGPoint(x: 100, y: 100), CGPoint(x: 0, y: 100)])
        // Nor solid: a side a line holds 77 % of is no timing side either.
        var straightTop = sides
        straightTop[0] = side(0, 0, 0.77, 0.77)
        #expect(DataMatrixLocator.uprightCorners(straightTop) == nil)
    }

    static let regionsText = "cvcam Data Matrix 2: FoUr DaTa ReGiOnS, eAcH wItH iTs OwN fInDeR"

    /// The 32×32-module fixture (four data regions; Tests/Fixtures/barcodes/datamatrix-regions.png,
    /// its symbol at 4..<132 px) drawn 5 px per module, centred in a 240 px frame, its middle
    /// pushed `bulge` modules along its rows (a label on a bent surface: the outer sides stay
    /// where they were).
    static func bulged(bulge: Double) throws -> PixelBuffer {
        let module = 5.0, size = 240
        let source = try CodeImaging.gray(
            try QRTestCorpus.photo(at: Fixtures.packageRoot.appendingPathComponent("Tests/Fixtures/barcodes/datamatrix-regions.png").path))
        let src = source.baseAddress.assumingMemoryBound(to: UInt8.self)
        let out = try PixelBuffer(width: size, height: size, pixelFormat: .gray)
        let dst = out.baseAddress.assumingMemoryBound(to: UInt8.self)
        let side = 32 * module, c = Double(size) / 2
        for y in 0..<size {
            for x in 0..<size {
                var u = (Double(x) + 0.5 - c) / side + 0.5, v = (Double(y) + 0.5 - c) / side + 0.5
                var value: UInt8 = 255
                if u >= 0, u < 1, v >= 0, v < 1 {
                    let push = bulge / 32 * sin(Double.pi * u) * sin(Double.pi * v)
                    u = min(max(u - push, 0), 0.9999)
                    v = min(v, 0.9999)
                    value = src[Int(4 + 128 * v) * source.bytesPerRow + Int(4 + 128 * u)]
                }
                dst[y * out.bytesPerRow + x] = value
            }
        }
        return out
    }

    /// A symbol of four data regions whose middle is pushed 0.8 of a module: placed between
    /// its outer edges, the middle modules are sampled a module's half or more off. Each
    /// region's own timing row and column run across the middle; read there, they put the
    /// middle modules where they are (zxing-cpp's sample `dm-2x2-a.webp` so).
    @Test func aSymbolsMiddleIsPlacedByItsInnerTimingPatterns() throws {
        let frame = try Self.bulged(bulge: 0.8)
        #expect(try Self.read(frame, locator: false).isEmpty, "zxing-cpp 1.4 alone reads it: the test shows nothing")
        let plain = try #require(try DataMatrixLocator.locate(try Self.bulged(bulge: 0)).first)
        let symbol = try #require(try DataMatrixLocator.locate(frame).first)
        #expect(symbol.rows == 32 && symbol.columns == 32)
        #expect(zip(symbol.dark, plain.dark).filter { $0 != $1 }.count <= 2)
        #expect(try Self.read(frame, locator: true).map(\.payload) == [Array(Self.regionsText.utf8)])
    }

    @Test func theLocatorFindsTheSymbolsSizeAndModules() throws {
        let gray = try Self.distorted(bend: 2)
        let symbols = try DataMatrixLocator.locate(gray)
        #expect(symbols.map { [$0.rows, $0.columns] } == [[12, 26]])
        #expect(symbols.first?.hasFinderPattern == true)
    }

    @Test func imagesWithoutAnLAreNotSymbols() throws {
        // A checkerboard of 6-px squares (timing on every side, no solid L) and a solid square.
        let board = try PixelBuffer(width: 120, height: 120, pixelFormat: .gray)
        let b = board.baseAddress.assumingMemoryBound(to: UInt8.self)
        for y in 0..<120 {
            for x in 0..<120 {
                let inside = x >= 20 && x < 100 && y >= 20 && y < 100
                b[y * board.bytesPerRow + x] = inside && ((x / 6 + y / 6) % 2 == 0) ? 0 : 255
            }
        }
        #expect(try DataMatrixLocator.locate(board).isEmpty)
        let square = try PixelBuffer(width: 120, height: 120, pixelFormat: .gray)
        let s = square.baseAddress.assumingMemoryBound(to: UInt8.self)
        for y in 0..<120 { for x in 0..<120 { s[y * square.bytesPerRow + x] = x >= 20 && x < 100 && y >= 20 && y < 100 ? 0 : 255 } }
        #expect(try DataMatrixLocator.locate(square).isEmpty)
    }
}
