import Foundation
import Testing

@testable import CaptureKit
@_spi(Benchmark) @testable import CaptureVision
import CaptureKitTesting

/// cvcam's own Aztec data decoding (`AztecData`, `ReedSolomon`): generated symbols
/// (Tests/Fixtures, made by Tools/make-code-fixtures) and hand-built bit streams.
@Suite struct AztecDataTests {
    /// A deterministic stream of numbers below `bound` (a linear congruential generator).
    struct Numbers {
        var state: UInt64
        mutating func next(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(bound))
        }
    }

    @Test(arguments: [(6, 20, 12), (8, 40, 30), (10, 120, 60), (12, 300, 200)])
    func reedSolomonCorrectsUpToHalfItsCheckWords(wordSize: Int, dataWords k: Int, checkWords n: Int) throws {
        let field = try #require(ReedSolomon.aztec(wordSize: wordSize))
        var numbers = Numbers(state: UInt64(wordSize))
        let data = (0..<k).map { _ in numbers.next(1 << wordSize) }
        let codeword = data + field.checkWords(data, count: n)
        var clean = codeword
        #expect(field.correct(&clean, checkWords: n) && clean == codeword)
        var damaged = codeword
        var positions = Set<Int>()
        while positions.count < n / 2 { positions.insert(numbers.next(codeword.count)) }
        for p in positions { damaged[p] ^= 1 + numbers.next((1 << wordSize) - 1) }
        #expect(damaged != codeword)
        #expect(field.correct(&damaged, checkWords: n))
        #expect(damaged == codeword, "\(n / 2) errors in GF(2^\(wordSize))")
    }

    /// The mode message's check words (GF(16), x⁴ + x + 1): the values the core's own encoder,
    /// which this field replaced, gave for the same words.
    @Test func theModeMessageFieldGivesTheCoresCheckWords() {
        #expect(ReedSolomon.aztec4.checkWords([9, 6, 3, 12], count: 6) == [7, 13, 8, 14, 15, 0])
        #expect(ReedSolomon.aztec4.checkWords([9, 6], count: 5) == [0, 13, 8, 14, 10])
    }

    /// Bits from (value, width) pairs.
    static func stream(_ codes: [(Int, Int)]) -> [Bool] {
        codes.flatMap { (value, width) in (0..<width).map { value >> (width - 1 - $0) & 1 == 1 } }
    }

    @Test func everyModeShiftAndLatchParses() throws {
        let bits = Self.stream([
            (2, 5), (1, 5), (28, 5), (3, 5),  // A, space, L/L, b
            (28, 5), (4, 5), (5, 5),  // U/S C, then d in Lower again
            (29, 5), (20, 5), (30, 5), (6, 5), (31, 5),  // M/L @, P/L !, U/L
            (30, 5), (3, 4), (4, 4), (12, 4),  // D/L 1 2 ,
            (15, 4), (6, 5), (5, 4),  // U/S E, then 3 in Digit again
            (0, 4), (0, 5), (2, 3), (4, 4), (8, 4),  // P/S FLG(2) 2 6: ECI 26 (UTF-8)
            (6, 4), (14, 4),  // 4, U/L
            (31, 5), (2, 5), (0xC3, 8), (0xA9, 8),  // B/S of 2 bytes: é in UTF-8
            (27, 5),  // Z, back in Upper
            (7, 3),  // padding: ones, fewer than a codeword
        ])
        let payload = try #require(AztecData.parse(bits, wordSize: 6))
        #expect(payload.bytes == Array("A bCd@!12,E34".utf8) + [0xC3, 0xA9] + Array("Z".utf8))
        #expect(payload.eci == [
            CodeText.ECISegment(eci: 3, bytes: Array("A bCd@!12,E3".utf8)),
            CodeText.ECISegment(eci: 26, bytes: Array("4".utf8) + [0xC3, 0xA9] + Array("Z".utf8)),
        ])
        #expect(CodeText.string(from: payload.bytes, eci: payload.eci) == "A bCd@!12,E34éZ")
    }

    @Test func aLeadingFNC1MarksGS1AndOthersAreSeparators() throws {
        // P/S FLG(0), D/L 0 1, P/S FLG(0) in Digit, 7
        let bits = Self.stream([(0, 5), (0, 5), (0, 3), (30, 5), (2, 4), (3, 4), (0, 4), (0, 5), (0, 3), (9, 4)])
        #expect(try #require(AztecData.parse(bits, wordSize: 6)).bytes == Array("01\u{1D}7".utf8))
    }

    @Test func aCodeRunningPastTheDataIsAnErrorUnlessItIsPadding() {
        // B/S of 3 bytes with one byte left: not padding (not all ones).
        #expect(AztecData.parse(Self.stream([(2, 5), (31, 5), (3, 5), (0x41, 8)]), wordSize: 6) == nil)
        // B/S read from the padding's ones, fewer than a codeword after it: the data ends.
        #expect(AztecData.parse(Self.stream([(2, 5), (31, 5), (7, 3)]), wordSize: 8)?.bytes == Array("A".utf8))
    }

    @Test func stuffedCodewordsCarryTheirFirstBitsOnly() {
        // 6-bit words: 000001 is five zeros, 111110 five ones, 000000 invalid.
        #expect(AztecData.unstuffed([1, 62, 0b101010], wordSize: 6)
            == [false, false, false, false, false, true, true, true, true, true, true, false, true, false, true, false])
        #expect(AztecData.unstuffed([1, 0], wordSize: 6) == nil)
        #expect(AztecData.unstuffed([63], wordSize: 6) == nil)
    }

    /// The symbol centred in a generated fixture (`module` px per module): its core read by
    /// `AztecCore`, and its modules sampled at their centres.
    static func symbol(_ name: String, module: Double) throws -> (AztecCore.Symbol, [Bool]) {
        let frame = try AztecTests.fixture("Tests/Fixtures/barcodes/\(name)")
        let gray = try CodeImaging.gray(frame)
        let binary = try CodeImaging.aboveMean(gray, try FinderEvidence.localMean(gray), offset: 1)
        let centre = CGPoint(x: Double(gray.width) / 2, y: Double(gray.height) / 2)
        let symbol = try #require(withExtendedLifetime(binary) {
            AztecCore.read(Thresholded(binary), bullseye: FinderEvidence.Finder(centre: centre, module: module, dark: true))
        })
        let dim = symbol.dimension
        let base = gray.baseAddress.assumingMemoryBound(to: UInt8.self)
        var dark = [Bool](repeating: false, count: dim * dim)
        for y in 0..<dim {
            for x in 0..<dim {
                let p = symbol.moduleToImage.apply(CGPoint(x: x - dim / 2, y: y - dim / 2))
                dark[y * dim + x] = base[Int(p.y.rounded()) * gray.bytesPerRow + Int(p.x.rounded())] < 128
            }
        }
        return (symbol, dark)
    }

    static let modesPayload = Array("cvcam Aztec modes: Upper lower 12345.67, Mixed @\\^_|~ punct !?#\r\n".utf8)
        + [0xE9, 0x00, 0xFF, 0x80] + Array(" end".utf8)

    @Test(arguments: [
        ("aztec-modes.png", 3.0, modesPayload), ("aztec-padding.png", 2.0, [UInt8](repeating: 0, count: 982)),
        ("../codes/aztec.png", 4.0, Array("cvcam Aztec 1".utf8)),
    ])
    func generatedSymbolsDecode(name: String, module: Double, payload: [UInt8]) throws {
        let (symbol, dark) = try Self.symbol(name, module: module)
        let dim = symbol.dimension
        #expect(AztecData.decode(symbol, dark: { dark[$1 * dim + $0] })?.bytes == payload)
        // Modules flipped in the outermost layer (data or check words alike): corrected.
        var damaged = dark
        for i in stride(from: 3, to: dim - 3, by: 4) { damaged[i] = !damaged[i] }
        #expect(damaged != dark)
        #expect(AztecData.decode(symbol, dark: { damaged[$1 * dim + $0] })?.bytes == payload, "\(name)")
    }
}
