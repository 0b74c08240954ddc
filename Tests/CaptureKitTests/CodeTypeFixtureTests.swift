import Foundation
import Testing

@testable import CaptureKit
@testable import CaptureVision
import CaptureKitTesting

/// The 2-D types zxing-cpp reads, end to end on generated fixtures (Tests/Fixtures/codes, made
/// by Tools/make-code-fixtures): each is read with its exact payload and type when enabled,
/// and not reported when it is not.
@Suite struct CodeTypeFixtureTests {
    struct Fixture: Sendable, CustomTestStringConvertible {
        var type: MetadataObjectType
        var file: String
        var text: String
        var testDescription: String { type.rawValue }
        var path: String { Fixtures.packageRoot.appendingPathComponent("Tests/Fixtures/codes/\(file)").path }
    }

    /// The fixtures and their payloads (as Tools/make-code-fixtures writes them).
    static let fixtures = [
        Fixture(type: .microQR, file: "microqr.png", text: "cvcam-mqr-1"),
        Fixture(type: .dataMatrix, file: "datamatrix.png", text: "cvcam Data Matrix 1"),
        Fixture(type: .aztec, file: "aztec.png", text: "cvcam Aztec 1"),
        Fixture(type: .pdf417, file: "pdf417.png", text: "cvcam PDF417 1"),
    ]

    @Test(arguments: fixtures) func readsTheExactPayloadWhenEnabled(_ fixture: Fixture) throws {
        #expect(CodeDetector.availableMetadataObjectTypes.contains(fixture.type))
        let detector = try CodeDetector(metadataObjectTypes: [fixture.type])
        let codes = try detector.detect(in: try QRTestCorpus.photo(at: fixture.path))
        #expect(codes.count == 1, "\(codes)")
        let code = try #require(codes.first)
        #expect(code.type == fixture.type)
        #expect(code.payload == Array(fixture.text.utf8))
        #expect(code.stringValue == fixture.text)
    }

    @Test(arguments: fixtures) func isNotReportedWhenNotEnabled(_ fixture: Fixture) throws {
        // Every other type this machine reads, QR included: the symbol is none of them.
        let others = CodeDetector.availableMetadataObjectTypes.subtracting([fixture.type])
        let detector = try CodeDetector(metadataObjectTypes: others)
        let codes = try detector.detect(in: try QRTestCorpus.photo(at: fixture.path))
        #expect(codes.isEmpty, "\(codes)")
    }
}
