import Foundation
import Testing

@_spi(Benchmark) @testable import CaptureKit
@_spi(Benchmark) @testable import CaptureVision

/// The bytes → text policy (`CodeText`), rule by rule, on byte fixtures built here, and how two
/// decoders' readings of one code merge.
@Suite struct CodeTextTests {
    /// "Britain’s": UTF-8 without an ECI whose bytes (E2 80 99) also pass as Shift_JIS; a
    /// multi-byte UTF-8 character decides for UTF-8.
    @Test func utf8WithoutECIIsNotGuessedAsShiftJIS() {
        let bytes = Array("Britain’s longest".utf8)
        #expect(CodeText.guessEncoding(bytes) == .utf8)
        #expect(CodeText.string(from: bytes) == "Britain’s longest")
    }

    /// A word of 3 or more double-byte characters is Shift_JIS.
    @Test func shiftJISDoubleByteWords() {
        let bytes: [UInt8] = [0x90, 0xCE, 0x90, 0xCF, 0x90, 0xD0]  // 石積籍
        #expect(CodeText.guessEncoding(bytes) == .shiftJIS)
        #expect(CodeText.string(from: bytes) == "石積籍")
    }

    /// Half-width katakana (JIS X 0201, single bytes 0xA1–0xDF) would pass as Latin-1 letters;
    /// a word of three or more of them is Shift_JIS.
    @Test func halfWidthKatakanaIsShiftJIS() {
        let bytes: [UInt8] = Array("*".utf8) + [0xC0, 0xDE, 0xCC, 0xDE, 0xD9] + Array("QR*".utf8)
        #expect(CodeText.guessEncoding(bytes) == .shiftJIS)
        #expect(CodeText.string(from: bytes) == "*ﾀﾞﾌﾞﾙQR*")
        // Exactly two katakana forming the only word: Shift_JIS too.
        #expect(CodeText.string(from: [0x41, 0xB1, 0xB2, 0x42]) == "AｱｲB")
    }

    /// In Shift_JIS, 0x5C is the backslash (MEBKM escapes ':' with it), not the yen sign, and
    /// 0x7E is the tilde.
    @Test func shiftJISBackslashAndTilde() {
        let bytes: [UInt8] = [0x92, 0x54, 0x82, 0xBB, 0x82, 0xA4, 0x5C, 0x3A, 0x7E]  // 探そう\:~
        #expect(CodeText.string(from: bytes) == "探そう\\:~")
    }

    /// Latin-1 letters stay Latin-1; C1 bytes (0x80–0x9F) rule it out.
    @Test func latin1() {
        #expect(CodeText.guessEncoding([0x43, 0x61, 0x66, 0xE9]) == .latin1)
        #expect(CodeText.string(from: [0x43, 0x61, 0x66, 0xE9]) == "Café")
        #expect(CodeText.string(from: Array("Stra".utf8) + [0xDF, 0x65]) == "Straße")
        // Mostly Latin-1 symbols (0xA0–0xBF) reads as katakana, as ZXing decides.
        #expect(CodeText.guessEncoding([0x41, 0xB0, 0x42]) == .shiftJIS)
    }

    /// Control bytes make a payload binary; so do bytes no candidate character set accepts.
    @Test func binary() {
        #expect(CodeText.string(from: [0x01, 0x01, 0x52, 0xC5, 0xE9, 0xD0, 0xE6]) == nil)
        #expect(CodeText.string(from: [0x00, 0xFF, 0x80, 0x01, 0x41]) == nil)
        #expect(CodeText.guessEncoding([0x80, 0xFF, 0xFE]) == nil)
        #expect(CodeText.string(from: [0x80, 0xFF, 0xFE]) == nil)
        #expect(CodeText.string(from: Array("tab\tand\r\nlines".utf8)) == "tab\tand\r\nlines")
    }

    /// ECI designators decide over any guess, segment by segment.
    @Test func eciDecidesTheCharacterSet() {
        // Shift_JIS-looking bytes declared ISO-8859-1 (ECI 3) are Latin-1.
        let declaredLatin1: [UInt8] = [0xB1, 0xB2, 0xB3]
        #expect(CodeText.guessEncoding(declaredLatin1) == .shiftJIS)
        #expect(CodeText.string(from: declaredLatin1, eci: [.init(eci: 3, bytes: declaredLatin1)]) == "±²³")
        // Two segments: UTF-8 then Shift_JIS.
        let segments: [CodeText.ECISegment] = [.init(eci: 26, bytes: Array("é".utf8)), .init(eci: 20, bytes: [0x93, 0xFA])]
        #expect(CodeText.string(from: segments.flatMap(\.bytes), eci: segments) == "é日")
        // ECI 899 is binary: no text of its own, the second opinion if any.
        #expect(CodeText.string(from: [0x41], eci: [.init(eci: 899, bytes: [0x41])]) == nil)
    }

    /// zxing-cpp's text fills in only where the policy finds none.
    @Test func theSecondOpinionFillsGapsOnly() {
        #expect(CodeText.string(from: [0x43, 0x61, 0x66, 0xE9], secondOpinion: "Cafﾉ") == "Café")
        #expect(CodeText.string(from: [0x80, 0xFF, 0xFE], secondOpinion: "x") == "x")
    }

    /// zxing-cpp's `bytesECI()` form: symbology identifier, `\nnnnnn` designators, doubled
    /// backslashes.
    @Test func eciSegmentsFromZXing() {
        let raw = Array("]Q2\\000026h".utf8) + [0xC3, 0xA9] + Array("\\\\x\\000020".utf8) + [0x93, 0xFA]
        #expect(
            ZXingReader.segments(eciBytes: raw) == [
                .init(eci: 26, bytes: Array("hé\\x".utf8)), .init(eci: 20, bytes: [0x93, 0xFA]),
            ])
        #expect(ZXingReader.segments(eciBytes: Array("]Q2\\0000".utf8)) == nil)
    }

    /// One code read by both decoders is one code, whether their bytes agree or only their
    /// texts (ZBar converted an ECI payload); a code nested in another, or the same payload
    /// elsewhere, is another code.
    @Test func readingsMergeByPositionAndPayload() {
        func square(_ x: Double, _ y: Double, _ side: Double) -> [CGPoint] {
            [CGPoint(x: x, y: y), CGPoint(x: x + side, y: y), CGPoint(x: x + side, y: y + side), CGPoint(x: x, y: y + side)]
        }
        let zxing = ScannedSymbol(
            type: .qr, bytes: [0xB1, 0xB2, 0xB3], points: square(10, 10, 100), quality: 1, orientation: 0,
            eci: [.init(eci: 3, bytes: [0xB1, 0xB2, 0xB3])])
        let zbar = ScannedSymbol(type: .qr, bytes: Array("±²³".utf8), points: square(12, 11, 99), quality: 1, orientation: 0)
        #expect(zxing.isSameCode(as: zbar) && zbar.isSameCode(as: zxing))
        var inner = zbar
        inner.bytes = Array("inner".utf8)
        inner.points = square(40, 40, 30)
        #expect(!zbar.isSameCode(as: inner))
        var elsewhere = zbar
        elsewhere.points = square(300, 300, 100)
        #expect(!zbar.isSameCode(as: elsewhere))
        var micro = zbar
        micro.type = .microQR
        #expect(!zbar.isSameCode(as: micro))
    }
}
