import Foundation
import Testing

@testable import CaptureKit
@_spi(Benchmark) @testable import CaptureVision
import CaptureKitTesting

/// A retail number ZBar read on few scan lines, checked against zxing-cpp's read of the frame
/// (`ScanRun.checkWeakRetailReads`). The misreads it was built for are photos recompressed by
/// zxing-cpp's sample folders (`bench-codes --codes-folder`); here the ZBar read is stated.
@Suite struct WeakRetailReadTests {
    /// An EAN-13 symbol of `digits` (13, check digit included), `module` px per module, bars
    /// 60 px tall, on a white 400x160 GRAY frame.
    static func ean13(_ digits: String, module: Int = 3) throws -> PixelBuffer {
        let l = ["0001101", "0011001", "0010011", "0111101", "0100011", "0110001", "0101111", "0111011", "0110111", "0001011"]
        let g = ["0100111", "0110011", "0011011", "0100001", "0011101", "0111001", "0000101", "0010001", "0001001", "0010111"]
        let r = ["1110010", "1100110", "1101100", "1000010", "1011100", "1001110", "1010000", "1000100", "1001000", "1110100"]
        let parity = ["LLLLLL", "LLGLGG", "LLGGLG", "LLGGGL", "LGLLGG", "LGGLLG", "LGGGLL", "LGLGLG", "LGLGGL", "LGGLGL"]
        let d = digits.compactMap { $0.wholeNumberValue }
        var bits = "101"
        for (i, p) in parity[d[0]].enumerated() { bits += p == "L" ? l[d[i + 1]] : g[d[i + 1]] }
        bits += "01010"
        for i in 7..<13 { bits += r[d[i]] }
        bits += "101"
        let frame = try PixelBuffer(width: 400, height: 160, pixelFormat: .gray)
        try Imaging.fill(frame, x: 0, y: 0, width: 400, height: 160, red: 255, green: 255, blue: 255, "test frame")
        let x0 = (400 - bits.count * module) / 2
        for (i, bit) in bits.enumerated() where bit == "1" {
            try Imaging.fill(frame, x: x0 + i * module, y: 50, width: module, height: 60, red: 0, green: 0, blue: 0, "bar")
        }
        return frame
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

    @Test func aNumberReadOnFewLinesGivesWayToZXingsReadOfTheSameBars() throws {
        let frame = try Self.ean13("4006381333931")
        // A misread that satisfies the check digit, as a damaged line's can.
        var run = try Self.run()
        run.found = [Self.zbarRead("4006381333948", lines: 3)]
        try run.checkWeakRetailReads(frame)
        #expect(run.found.map { String(decoding: $0.bytes, as: UTF8.self) } == ["4006381333931"])
        #expect(run.counts.zxingReads == 1)
    }

    @Test func aNumberReadOnManyLinesOrConfirmedOrUnreadByZXingStays() throws {
        let frame = try Self.ean13("4006381333931")
        var strong = try Self.run()
        strong.found = [Self.zbarRead("4006381333948", lines: 30)]
        try strong.checkWeakRetailReads(frame)
        #expect(strong.found.map { String(decoding: $0.bytes, as: UTF8.self) } == ["4006381333948"])
        #expect(strong.counts.zxingReads == 0)
        var confirmed = try Self.run()
        confirmed.found = [Self.zbarRead("4006381333931", lines: 3)]
        try confirmed.checkWeakRetailReads(frame)
        #expect(confirmed.found.map { String(decoding: $0.bytes, as: UTF8.self) } == ["4006381333931"])
        // No bars for zxing-cpp to read: ZBar's number stays.
        let blank = try PixelBuffer(width: 400, height: 160, pixelFormat: .gray)
        try Imaging.fill(blank, x: 0, y: 0, width: 400, height: 160, red: 255, green: 255, blue: 255, "test frame")
        var unread = try Self.run()
        unread.found = [Self.zbarRead("4006381333948", lines: 3)]
        try unread.checkWeakRetailReads(blank)
        #expect(unread.found.map { String(decoding: $0.bytes, as: UTF8.self) } == ["4006381333948"])
        var passes = CodeDetector.Passes()
        passes.weakRetailCheck = false
        var off = try Self.run(passes)
        off.found = [Self.zbarRead("4006381333948", lines: 3)]
        try off.checkWeakRetailReads(frame)
        #expect(off.found.map { String(decoding: $0.bytes, as: UTF8.self) } == ["4006381333948"])
    }
}
