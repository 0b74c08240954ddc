import Foundation
import Testing

@testable import CaptureKit
@_spi(Benchmark) @testable import CaptureVision
import CaptureKitTesting

/// A retail number ZBar read on few scan lines, checked against zxing-cpp's read of the frame
/// (`ScanRun.checkDoubtfulLinearReads`, `Passes.linearReadCheck`). The misreads it was built for are photos recompressed by
/// zxing-cpp's sample folders (`bench-codes --codes-folder`); here the ZBar read is stated.
@Suite struct DoubtfulLinearReadTests {
    /// EAN/UPC digit patterns (modules, 1 dark): L (odd parity), G (even), R (right half).
    static let l = ["0001101", "0011001", "0010011", "0111101", "0100011", "0110001", "0101111", "0111011", "0110111", "0001011"]
    static let g = ["0100111", "0110011", "0011011", "0100001", "0011101", "0111001", "0000101", "0010001", "0001001", "0010111"]
    static let r = ["1110010", "1100110", "1101100", "1000010", "1011100", "1001110", "1010000", "1000100", "1001000", "1110100"]

    /// `bits` (one per module, 1 dark) at `module` px per module, bars 60 px tall, centred on a
    /// white 400x160 GRAY frame; and where the first module starts.
    static func drawn(_ bits: String, module: Int) throws -> (frame: PixelBuffer, x0: Int) {
        let frame = try PixelBuffer(width: 400, height: 160, pixelFormat: .gray)
        try Imaging.fill(frame, x: 0, y: 0, width: 400, height: 160, red: 255, green: 255, blue: 255, "test frame")
        let x0 = (400 - bits.count * module) / 2
        for (i, bit) in bits.enumerated() where bit == "1" {
            try Imaging.fill(frame, x: x0 + i * module, y: 50, width: module, height: 60, red: 0, green: 0, blue: 0, "bar")
        }
        return (frame, x0)
    }

    /// An EAN-13 symbol of `digits` (13, check digit included), `module` px per module (`drawn`).
    static func ean13(_ digits: String, module: Int = 3) throws -> PixelBuffer {
        let parity = ["LLLLLL", "LLGLGG", "LLGGLG", "LLGGGL", "LGLLGG", "LGGLLG", "LGGGLL", "LGLGLG", "LGLGGL", "LGGLGL"]
        let d = digits.compactMap { $0.wholeNumberValue }
        var bits = "101"
        for (i, p) in parity[d[0]].enumerated() { bits += p == "L" ? l[d[i + 1]] : g[d[i + 1]] }
        bits += "01010"
        for i in 7..<13 { bits += r[d[i]] }
        bits += "101"
        return try drawn(bits, module: module).frame
    }

    static func run(_ passes: CodeDetector.Passes = CodeDetector.Passes()) throws -> ScanRun {
        ScanRun(scanner: try ZBarScanner(), zxing: try ZXingReader(), passes: passes, types: [.ean13, .upca])
    }

    /// ZBar's read of `number` across the bars of `ean13`, on `lines` scan lines.
    static func zbarRead(_ number: String, lines: Int) -> ScannedSymbol {
        ScannedSymbol(
            type: .ean13, bytes: Array(number.utf8), points: [CGPoint(x: 57, y: 80), CGPoint(x: 343, y: 80)], quality: lines,
            orientation: 0)
    }

    /// What `checkDoubtfulLinearReads` leaves of ZBar's read of `number` on `lines` scan lines
    /// in `frame`: the payloads found, and how many zxing-cpp reads it took.
    static func checked(
        _ number: String, lines: Int, in frame: PixelBuffer, passes: CodeDetector.Passes = CodeDetector.Passes(),
        sharpened: Bool = false
    ) throws -> (payloads: [String], zxingReads: Int) {
        var run = try Self.run(passes)
        run.found = [Self.zbarRead(number, lines: lines)]
        run.found[0].onSharpenedCopy = sharpened
        try run.checkDoubtfulLinearReads(frame)
        return (run.found.map { String(decoding: $0.bytes, as: UTF8.self) }, run.counts.zxingReads)
    }

    @Test func aNumberReadOnFewLinesGivesWayToZXingsReadOfTheSameBars() throws {
        // A misread that satisfies the check digit, as a damaged line's can.
        let result = try Self.checked("4006381333948", lines: 3, in: try Self.ean13("4006381333931"))
        #expect(result.payloads == ["4006381333931"] && result.zxingReads == 1)
    }

    @Test func aNumberReadOnManyLinesOfTheSharpenedCopyIsCheckedToo() throws {
        let frame = try Self.ean13("4006381333931")
        #expect(try Self.checked("4006381333948", lines: 30, in: frame, sharpened: true).payloads == ["4006381333931"])
        var passes = CodeDetector.Passes()
        passes.sharpenedReadCheck = false
        #expect(try Self.checked("4006381333948", lines: 30, in: frame, passes: passes, sharpened: true).payloads == ["4006381333948"])
    }

    @Test func aNumberReadOnManyLinesOrConfirmedOrUnreadByZXingStays() throws {
        let frame = try Self.ean13("4006381333931")
        let strong = try Self.checked("4006381333948", lines: 30, in: frame)
        #expect(strong.payloads == ["4006381333948"] && strong.zxingReads == 0)
        #expect(try Self.checked("4006381333931", lines: 3, in: frame).payloads == ["4006381333931"])
        // No bars for zxing-cpp to read: ZBar's number stays.
        let blank = try PixelBuffer(width: 400, height: 160, pixelFormat: .gray)
        try Imaging.fill(blank, x: 0, y: 0, width: 400, height: 160, red: 255, green: 255, blue: 255, "test frame")
        #expect(try Self.checked("4006381333948", lines: 3, in: blank).payloads == ["4006381333948"])
        var passes = CodeDetector.Passes()
        passes.linearReadCheck = false
        #expect(try Self.checked("4006381333948", lines: 3, in: frame, passes: passes).payloads == ["4006381333948"])
    }
}

/// Code 128 with FNC4 (extended Latin-1): ZBar drops the FNC4 and reads `ó` as `s`; zxing-cpp's
/// read of the same bars stands (`ScanRun.checkDoubtfulLinearReads`).
@Suite struct Code128FNC4Tests {
    /// Bar and space widths of Code 128's symbol values 0–105, and the stop pattern.
    static let patterns = [
        "212222", "222122", "222221", "121223", "121322", "131222", "122213", "122312", "132212", "221213",
        "221312", "231212", "112232", "122132", "122231", "113222", "123122", "123221", "223211", "221132",
        "221231", "213212", "223112", "312131", "311222", "321122", "321221", "312212", "322112", "322211",
        "212123", "212321", "232121", "111323", "131123", "131321", "112313", "132113", "132311", "211313",
        "231113", "231311", "112133", "112331", "132131", "113123", "113321", "133121", "313121", "211331",
        "231131", "213113", "213311", "213131", "311123", "311321", "331121", "312113", "312311", "332111",
        "314111", "221411", "431111", "111224", "111422", "121124", "121421", "141122", "141221", "112214",
        "112412", "122114", "122411", "142112", "142211", "241211", "221114", "413111", "241112", "134111",
        "111242", "121142", "121241", "114212", "124112", "124211", "411212", "421112", "421211", "212141",
        "214121", "412121", "111143", "111341", "131141", "114113", "114311", "411113", "411311", "113141",
        "114131", "311141", "411131", "211412", "211214", "211232",
    ]
    static let stop = "2331112"

    /// `text` (Latin-1) in code set B, FNC4 before each character over 127, `module` px per
    /// module, bars 60 px tall, on a white 480x160 GRAY frame.
    static func symbol(_ text: String, module: Int = 2) throws -> PixelBuffer {
        var values = [104]
        for scalar in text.unicodeScalars {
            var v = Int(scalar.value)
            if v > 127 {
                values.append(100)
                v -= 128
            }
            values.append(v - 32)
        }
        let check = (values.enumerated().reduce(0) { $0 + ($1.offset == 0 ? $1.element : $1.offset * $1.element) }) % 103
        let widths = (values + [check]).map { patterns[$0] }.joined() + stop
        let frame = try PixelBuffer(width: 480, height: 160, pixelFormat: .gray)
        try Imaging.fill(frame, x: 0, y: 0, width: 480, height: 160, red: 255, green: 255, blue: 255, "test frame")
        var x = 40
        for (i, w) in widths.enumerated() {
            let width = Int(String(w))! * module
            if i % 2 == 0 { try Imaging.fill(frame, x: x, y: 50, width: width, height: 60, red: 0, green: 0, blue: 0, "bar") }
            x += width
        }
        return frame
    }

    @Test func extendedLatin1ComesFromZXingWhereZBarDropsTheFNC4() throws {
        let frame = try Self.symbol("caf\u{E9} 12")
        let detector = try CodeDetector(metadataObjectTypes: [.code128])
        #expect(try detector.detections(in: frame).map(\.stringValue) == ["caf\u{E9} 12"])
        var passes = CodeDetector.Passes()
        passes.linearReadCheck = false
        let zbarOnly = try CodeDetector(metadataObjectTypes: [.code128], passes: passes)
        // What ZBar makes of it: the FNC4 dropped, é (0xE9) read as i (0x69).
        #expect(try zbarOnly.detections(in: frame).map(\.stringValue) == ["cafi 12"])
    }
}

/// A strip under 8 pixels (a line-scan crop) holds no 2-D code: a detector for every type reads
/// its linear codes there and skips the 2-D passes, which would halve it to nothing.
@Suite struct LinearStripTests {
    @Test func aStripOfAFewRowsIsReadForItsBarsWithEveryTypeAsked() throws {
        let symbol = try DoubtfulLinearReadTests.ean13("4006381333931")
        let strip = try CodeImaging.crop(symbol, PixelRect(x: 0, y: 78, width: 400, height: 4))
        let every = try CodeDetector(metadataObjectTypes: Set(CodeDetector.availableMetadataObjectTypes))
        #expect(try every.detections(in: strip).map(\.stringValue) == ["4006381333931"])
    }

    @Test func oneRowOrColumnOfBarsIsReadWithItsLinesRepeated() throws {
        // ZBar and zxing-cpp 1.4 each want a linear symbol on two or more scan lines: one row
        // read nothing until its line was repeated (`ScanRun.readStretchedStrip`).
        let symbol = try DoubtfulLinearReadTests.ean13("4006381333931")
        let row = try CodeImaging.crop(symbol, PixelRect(x: 0, y: 80, width: 400, height: 1))
        let every = try CodeDetector(metadataObjectTypes: Set(CodeDetector.availableMetadataObjectTypes))
        #expect(try every.detections(in: row).map(\.stringValue) == ["4006381333931"])
        // The same row standing upright (bars across a one-pixel column).
        let column = try PixelBuffer(width: 1, height: 400, pixelFormat: .gray)
        withExtendedLifetime((row, column)) {
            for y in 0..<400 { column.baseAddress.storeBytes(of: row.pixel(x: y, y: 0)[0], toByteOffset: y * column.bytesPerRow, as: UInt8.self) }
        }
        #expect(try every.detections(in: column).map(\.stringValue) == ["4006381333931"])
        var passes = CodeDetector.Passes()
        passes.stripRead = false
        let without = try CodeDetector(metadataObjectTypes: Set(CodeDetector.availableMetadataObjectTypes), passes: passes)
        #expect(try without.detections(in: row).isEmpty, "read without the repeated lines: the test shows nothing")
    }
}

/// Code 128 blurred below a module's width in a small still: read by zxing-cpp at twice its size,
/// unsharp-masked, where the frame, its sharpened copy and its double read nothing
/// (`ScanRun.readDoubledSharpened`, `Passes.doubledLinearRead`).
@Suite struct DoubledLinearReadTests {
    @Test(arguments: [(0.7, 0.8), (0.8, 1.0)])
    func aBlurredCode128IsReadAtTwiceItsSizeSharpened(scale: Double, sigma: Double) throws {
        let drawn = try Code128FNC4Tests.symbol("CVCAM 15182881", module: 2)
        let small = try CodeImaging.resized(drawn, width: Int(480 * scale), height: Int(160 * scale))
        let frame = try CodeImaging.blurred(small, sigma: sigma)
        #expect(try CodeDetector(metadataObjectTypes: [.code128]).detections(in: frame).map(\.stringValue) == ["CVCAM 15182881"])
        var passes = CodeDetector.Passes()
        passes.doubledLinearRead = false
        #expect(try CodeDetector(metadataObjectTypes: [.code128], passes: passes).detections(in: frame).isEmpty)
    }
}

/// Two EAN/UPC numbers over the same bars (`ScanRun.resolveRetailConflicts`): zxing-cpp's read
/// of their area decides; where it confirms neither, neither stays.
@Suite struct RetailConflictTests {
    static func conflict(in frame: PixelBuffer, passes: CodeDetector.Passes = CodeDetector.Passes()) throws -> [String] {
        var run = try DoubtfulLinearReadTests.run(passes)
        run.found = [
            DoubtfulLinearReadTests.zbarRead("4006381333948", lines: 37),
            DoubtfulLinearReadTests.zbarRead("4006381333931", lines: 16),
        ]
        try run.resolveRetailConflicts(frame)
        return run.found.map { String(decoding: $0.bytes, as: UTF8.self) }
    }

    @Test func theNumberZXingReadsThereStays() throws {
        #expect(try Self.conflict(in: try DoubtfulLinearReadTests.ean13("4006381333931")) == ["4006381333931"])
    }

    @Test func neitherStaysWhereZXingConfirmsNeither() throws {
        let blank = try PixelBuffer(width: 400, height: 160, pixelFormat: .gray)
        try Imaging.fill(blank, x: 0, y: 0, width: 400, height: 160, red: 255, green: 255, blue: 255, "test frame")
        #expect(try Self.conflict(in: blank).isEmpty)
        var passes = CodeDetector.Passes()
        passes.unconfirmedConflictDropped = false
        #expect(try Self.conflict(in: blank, passes: passes) == ["4006381333948"])
    }

    @Test func whereZXingDoesNotLookTheNumberReadOnMoreLinesStays() throws {
        // zxing-cpp off (and ZBar alone): nothing was asked, so nothing is unconfirmed.
        var passes = CodeDetector.Passes()
        passes.zxing = false
        #expect(try Self.conflict(in: try DoubtfulLinearReadTests.ean13("4006381333931"), passes: passes) == ["4006381333948"])
        #expect(try Self.conflict(in: try DoubtfulLinearReadTests.ean13("4006381333931"), passes: .zbarOnly) == ["4006381333948"])
    }
}
