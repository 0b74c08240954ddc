import CVBridge
import Foundation
import Testing

@testable import CaptureKit
@_spi(Benchmark) @testable import CaptureVision
import CaptureKitTesting

/// Finders of codes with 2-px modules turned a little: sampled and thresholded, their one-module
/// rings are 1–3 px on every row, which half a module (1 px) of room rejects. The full-size look
/// takes them within half a pixel more (`Passes.looseSmallFinders`), and keeps such a finder only
/// as one of three placed as a code's.
@Suite struct SmallFinderTests {
    /// The frames of `Tools/bench-codes --small-turned`, read with and without the looser test.
    static func reads(looseSmallFinders: Bool) throws -> (read: Int, frames: Int) {
        var passes = CodeDetector.Passes()
        passes.looseSmallFinders = looseSmallFinders
        let detector = try CodeDetector(metadataObjectTypes: [.qr], passes: passes)
        let codes = try QRTestCorpus.smallTurnedCodes()
        let read = try codes.filter { code in try detector.detections(in: code.frame).contains { $0.payload == code.payload } }.count
        return (read, codes.count)
    }

    @Test func everySmallTurnedCodeIsRead() throws {
        let with = try Self.reads(looseSmallFinders: true)
        #expect(with.read == with.frames, "\(with.read) of \(with.frames)")
        // The frames need the looser test: without it some are not read.
        let without = try Self.reads(looseSmallFinders: false)
        #expect(without.read < with.read, "without the looser test \(without.read) of \(without.frames)")
    }

    static func finder(_ x: Double, _ y: Double, loose: Bool) -> FinderEvidence.Finder {
        FinderEvidence.Finder(centre: CGPoint(x: x, y: y), module: 2, dark: true, columnModule: 2, looseRow: loose)
    }

    @Test func aLooseFinderIsKeptOnlyAsOneOfACodesThree() {
        // Three at the corners of a version-5 code (37 modules: centres 30 modules apart).
        let code = [Self.finder(100, 100, loose: true), Self.finder(160, 100, loose: true), Self.finder(100, 160, loose: false)]
        // Texture: a lone loose finder, and a strict one, far from the code (each apart from the
        // code: three finders far apart can be a large code's).
        let lone = Self.finder(400, 300, loose: true)
        let strict = Self.finder(500, 50, loose: false)
        #expect(ScanRun.keepingLooseFindersInTriples(code + [lone]).map(\.centre) == code.map(\.centre))
        #expect(ScanRun.keepingLooseFindersInTriples(code + [strict]).map(\.centre) == (code + [strict]).map(\.centre))
        #expect(ScanRun.keepingLooseFindersInTriples([lone]).isEmpty)
        // Loose finders in a line, or too close for a code, are not a code's three.
        let line = [Self.finder(100, 100, loose: true), Self.finder(160, 100, loose: true), Self.finder(220, 100, loose: true)]
        #expect(ScanRun.keepingLooseFindersInTriples(line).isEmpty)
        let close = [Self.finder(100, 100, loose: true), Self.finder(110, 100, loose: true), Self.finder(100, 110, loose: true)]
        #expect(ScanRun.keepingLooseFindersInTriples(close).isEmpty)
        // Without loose finders nothing changes.
        #expect(ScanRun.keepingLooseFindersInTriples([strict, code[2]]).map(\.centre) == [strict, code[2]].map(\.centre))
    }
}
