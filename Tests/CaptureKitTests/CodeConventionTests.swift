import Foundation
import Testing

@testable import CaptureKit
@_spi(Benchmark) @testable import CaptureVision
import CaptureKitTesting

/// The payload conventions of Docs/codes.md, end to end on generated linear symbols
/// (Tests/Fixtures/barcodes, made by Tools/make-code-fixtures), and the guards around zxing-cpp
/// 1.4's linear reader.
@Suite struct CodeConventionTests {
    static func fixture(_ name: String) throws -> PixelBuffer {
        try QRTestCorpus.photo(at: Fixtures.packageRoot.appendingPathComponent("Tests/Fixtures/barcodes/\(name)").path)
    }

    static func read(_ name: String, _ types: Set<MetadataObjectType>) throws -> [CodeDetection] {
        try CodeDetector(metadataObjectTypes: types).detections(in: try fixture(name))
    }

    @Test func upcAIsTwelveDigitsWhenUPCAIsAskedFor() throws {
        let codes = try Self.read("upca.png", [.upca, .ean13])
        #expect(codes.map(\.type) == [.upca])
        #expect(codes.map(\.stringValue) == ["036000291452"])
    }

    /// AVFoundation has no UPC-A type: it delivers UPC-A as an EAN-13 with a leading 0.
    @Test func upcAIsAnEAN13WithALeadingZeroWhenOnlyEAN13IsAskedFor() throws {
        let codes = try Self.read("upca.png", [.ean13])
        #expect(codes.map(\.type) == [.ean13])
        #expect(codes.map(\.stringValue) == ["0036000291452"])
    }

    /// Encoded as `+C+V+C+A+M-39`: every shift pair valid, so read in full-ASCII mode.
    @Test func code39WithValidShiftPairsIsReadInFullASCII() throws {
        let codes = try Self.read("code39-fullascii.png", [.code39])
        #expect(codes.map(\.stringValue) == ["cvcam-39"])
        #expect(codes.first?.payload == Array("cvcam-39".utf8))
    }

    @Test func codabarKeepsItsStartAndStopCharacters() throws {
        let codes = try Self.read("codabar.png", [.codabar])
        #expect(codes.map(\.stringValue) == ["A40156B"])
    }

    /// Two different EAN-13 side by side (an ISBN and a price label on a book) are two codes,
    /// not a misread to resolve.
    @Test func twoDifferentEAN13SideBySideAreBothReported() throws {
        let codes = try Self.read("ean13-pair.png", [.ean13])
        #expect(Set(codes.compactMap(\.stringValue)) == ["9784872348880", "4006381333931"])
    }

    /// A crop four rows tall holds a readable linear code (it was refused under 8 pixels a side).
    @Test func aLinearCodeInAStripFourRowsTallIsRead() throws {
        let strip = try Self.fixture("itf-strip.png")
        #expect(strip.height == 4)
        let codes = try CodeDetector(metadataObjectTypes: [.interleaved2of5]).detections(in: strip)
        #expect(codes.map(\.stringValue) == ["00123456"])
        // A 2-D code cannot be that small: nothing is looked for.
        #expect(try CodeDetector(metadataObjectTypes: [.qr]).detections(in: strip).isEmpty)
    }

    /// zxing-cpp 1.4 aborts the process (a failed assertion in `Result::operator==`) when one
    /// read finds the same linear code twice; the reader reads linear formats one symbol at a
    /// time. Without that, this test takes the test process down.
    @Test func zxingReadsTwoIdenticalLinearLabelsWithoutAborting() throws {
        let gray = try CodeImaging.gray(try Self.fixture("code128-twice.png"))
        let reader = try ZXingReader()
        for types: Set<MetadataObjectType> in [[.code128], [.code128, .ean13, .code39, .qr, .dataMatrix]] {
            let codes = try reader.read(gray, hints: .defaults(types))
            #expect(codes.map { String(decoding: $0.bytes, as: UTF8.self) } == ["CVCAM-42"])
        }
        let detected = try CodeDetector(metadataObjectTypes: [.code128]).detections(in: try Self.fixture("code128-twice.png"))
        #expect(Set(detected.compactMap(\.stringValue)) == ["CVCAM-42"])
    }

    /// Asking for QR and any other type keeps QR's finder gate: on a code-free photo the QR
    /// passes do what they do for QR alone (the other types add one read each, no rescue pass).
    @Test func otherTypesDoNotTurnOffTheQRFinderGate() throws {
        let photo = try QRTestCorpus.photo(at: Fixtures.faces.appendingPathComponent("negatives/coffee.png").path)
        let qrOnly = try CodeDetector(metadataObjectTypes: [.qr])
        let mixed = try CodeDetector(metadataObjectTypes: [.qr, .ean13, .dataMatrix])
        #expect(try qrOnly.detections(in: photo).isEmpty)
        #expect(try mixed.detections(in: photo).isEmpty)
        #expect(mixed.passCounts.rescues == qrOnly.passCounts.rescues)
        #expect(mixed.passCounts.localisations == qrOnly.passCounts.localisations)
    }

    @Test func code39FullASCIITable() {
        func ext(_ s: String) -> String? { CodeConventions.code39FullASCII(Array(s.utf8)).map { String(decoding: $0, as: UTF8.self) } }
        #expect(ext("+A+B12") == "ab12")
        #expect(ext("$M$J") == "\r\n")
        #expect(ext("/A/O/Z") == "!/:")
        #expect(ext("%F%K%P%V%W") == ";[{@`")
        #expect(CodeConventions.code39FullASCII(Array("%U".utf8)) == [0])
        // No shift character, or an invalid pair: plain Code 39, left as it is.
        #expect(ext("CODE-39") == nil)
        #expect(ext("A+1") == nil)
        #expect(ext("/P") == nil)
        #expect(ext("AB+") == nil)
    }

    @Test func retailNumberForms() {
        #expect(CodeConventions.isbn10(fromEAN13: Array("9780306406157".utf8)) == Array("0306406152".utf8))
        #expect(CodeConventions.isbn10(fromEAN13: Array("9780805300048".utf8)) == Array("080530004X".utf8))
        #expect(CodeConventions.upcEToA(Array("01234565".utf8)) == Array("012345000065".utf8))
        #expect(CodeConventions.upcEToA(Array("04252614".utf8)) == Array("042100005264".utf8))
        let upca = ScannedSymbol(type: .upca, bytes: Array("036000291452".utf8), points: [], quality: 1, orientation: 0)
        let ean = ScannedSymbol(type: .ean13, bytes: Array("0036000291452".utf8), points: [], quality: 1, orientation: 0)
        #expect(CodeConventions.gtin(upca) == CodeConventions.gtin(ean))
        #expect(CodeConventions.normalised(ean, requested: [.upca, .ean13]).bytes == upca.bytes)
        #expect(CodeConventions.normalised(upca, requested: [.ean13]).bytes == ean.bytes)
    }

    /// Two reads over the same bars (scan lines of one code) versus two codes side by side or
    /// stacked.
    @Test func readsOverTheBarsOfOneCode() {
        let line1 = CGRect(x: 100, y: 200, width: 300, height: 2), line2 = CGRect(x: 110, y: 240, width: 280, height: 4)
        #expect(ScanRun.overBarsOfOneCode(line1, line2))
        #expect(!ScanRun.overBarsOfOneCode(line1, CGRect(x: 430, y: 200, width: 300, height: 2)))
        #expect(!ScanRun.overBarsOfOneCode(line1, CGRect(x: 100, y: 400, width: 300, height: 2)))
        #expect(ScanRun.overBarsOfOneCode(CGRect(x: 50, y: 0, width: 2, height: 200), CGRect(x: 60, y: 10, width: 1, height: 180)))
    }
}
