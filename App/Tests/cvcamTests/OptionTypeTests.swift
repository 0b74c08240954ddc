import ArgumentParser
import CaptureKit
import Foundation
import Testing

@testable import CaptureJobs
@testable import CapturePreview
@testable import CaptureServe
@testable import CVCamCommands
import AppTestSupport

/// The typed options: what each accepts, what it refuses, and that --help lists the values.
@Suite struct OptionTypeTests {
    @Test func gravityNamesMapToTheLayersGravity() {
        #expect(Gravity(argument: "fit")?.videoGravity == .resizeAspect)
        #expect(Gravity(argument: "fill")?.videoGravity == .resizeAspectFill)
        #expect(Gravity(argument: "stretch")?.videoGravity == .resize)
        // Every layer gravity has a name.
        #expect(Set(Gravity.allCases.map(\.videoGravity)) == Set(CaptureVideoPreviewLayer.VideoGravity.allCases))
    }

    @Test(arguments: ["zoom", "Fit", "", "resizeAspect", " fit"])
    func unknownGravityIsRefused(_ name: String) {
        #expect(Gravity(argument: name) == nil)
    }

    @Test func rotationsAreTheOnesTheLayerSupports() {
        #expect(Rotation.allCases.map { Double($0.degrees) } == CaptureVideoPreviewLayer.supportedVideoRotationAngles)
        #expect(Rotation(argument: "270") == .threeQuarterTurn)
        for bad in ["45", "-90", "360", "ninety", ""] { #expect(Rotation(argument: bad) == nil, "\(bad)") }
    }

    @Test func presetsAreOnlyTheLibrarysOwn() {
        #expect(SessionPreset(argument: "photo") == .photo)
        #expect(SessionPreset(argument: "1280x720") == .hd1280x720)
        #expect(SessionPreset(argument: "huge") == nil)
        #expect(SessionPreset.allValueStrings == SessionPreset.allCases.map(\.rawValue))
    }

    @Test func viewSizeParsing() {
        #expect(ViewSize(argument: "1080x1920")?.bounds == CGRect(x: 0, y: 0, width: 1080, height: 1920))
        #expect(ViewSize(argument: "800X600") == ViewSize(width: 800, height: 600))
    }

    @Test(arguments: ["1080", "0x600", "-3x4", "axb", "1x2x3", "infx3", "nanx3", "x600", "800x", "", "320.5x240", "16385x10"])
    func badViewSizeIsRefused(_ text: String) {
        #expect(ViewSize(argument: text) == nil)
    }

    @Test func codeTypesAreACommaListOfKnownTypesOrAll() {
        #expect(CodeTypeSelection(argument: "all") == .all)
        #expect(CodeTypeSelection(argument: "QR,ean13") == .only([.qr, .ean13]))
        #expect(CodeTypeSelection(argument: "databar-exp") == .only([.dataBarExpanded]))
        for bad in ["", "qr,", ",qr", "qr,,ean13", "face", "qr,bogus", "all,qr"] {
            #expect(CodeTypeSelection(argument: bad) == nil, "\(bad)")
        }
    }

    /// `--help` names the allowed values, so nobody has to read the source to find them.
    @Test func helpListsTheAllowedValues() {
        let faces = Faces.helpMessage(columns: 10_000)
        #expect(faces.contains("values: fit, fill, stretch"), "\(faces)")
        #expect(faces.contains("values: 0, 90, 180, 270"))
        #expect(faces.contains("values: " + SessionPreset.allCases.map(\.rawValue).joined(separator: ", ")))
        let scan = Scan.helpMessage(columns: 10_000)
        #expect(scan.contains("values: qr, microqr"), "\(scan)")
        #expect(scan.contains("default: qr,microqr,aztec,datamatrix,pdf417)"), "\(scan)")
    }

    @Test(arguments: [
        ["--gravity", "wide"], ["--rotate", "45"], ["--preset", "huge"], ["--view", "0x10"], ["--types", "qr,"],
        ["--motion-mask", "0,0,2,1"], ["--motion-mask", "nan,0,1,1"], ["--motion-mask", "0,0,0,1"], ["--motion-mask", "a,b,c,d"],
    ])
    func aRefusedValueIsAUsageError(_ arguments: [String]) {
        do {
            _ = try Scan.parseAsRoot(arguments)
            Issue.record("\(arguments) parsed")
        } catch {
            #expect(Scan.exitCode(for: error).rawValue == 64)
            #expect(Scan.message(for: error).contains(arguments[0]))
        }
    }
}
