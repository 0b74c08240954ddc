import Foundation
import Testing

@testable import CaptureKit
@_spi(Benchmark) @testable import CaptureVision
import CaptureKitTesting

/// An Aztec symbol whose rings and modules are soft (a recompressed or blurred photo), in a
/// camera-sized frame: its core is read at a finer scale than the one chosen for its modules,
/// and the symbol warped upright at 10 pixels per module (`Passes.aztecSoftScales`). The real
/// photos this was built for are zxing-cpp's `aztec-2` WebP samples (`bench-codes
/// --codes-folder aztec=DIR`).
@Suite struct AztecSoftScaleTests {
    @Test(arguments: [(12.0, 15.0, 2.5), (8.0, 30.0, 3.0)])
    func aSoftSymbolIsReadAtTheScalesItsModulesNeed(module: Double, angle: Double, sigma: Double) throws {
        let placed = try SymbolCueTests.placed(
            "Tests/Fixtures/codes/aztec.png", module: module, angle: angle, centre: CGPoint(x: 320, y: 240), seed: 3)
        let soft = try CodeImaging.blurred(placed, sigma: sigma)
        try CodeImaging.addNoise(soft, seed: 5, standardDeviation: 4)
        let codes = try CodeDetector(metadataObjectTypes: [.aztec]).detections(in: soft)
        #expect(codes.map(\.stringValue) == ["cvcam Aztec 1"])
        var passes = CodeDetector.Passes()
        passes.aztecSoftScales = false
        #expect(try CodeDetector(metadataObjectTypes: [.aztec], passes: passes).detections(in: soft).isEmpty)
    }
}
