import ArgumentParser
import Foundation
import Testing

@testable import CaptureJobs
@testable import CapturePreview
@testable import CaptureServe
@testable import CVCamCommands
import AppTestSupport

/// Parsing and validation in-process, and the error text users see.
@Suite struct ParsingTests {
    @Test func sharedOptionsParse() throws {
        let faces = try Faces.parse([
            "--input", "clip.mp4", "--rotate", "90", "--mirror", "--view", "1080x1920", "--gravity", "fill",
            "--rect-of-interest", "0.25,0.25,0.5,0.5", "--realtime", "--json", "--update-interval", "0.5",
        ])
        #expect(faces.input.input == "clip.mp4")
        #expect(faces.input.rotate == .quarterTurn)
        #expect(faces.input.view == ViewSize(width: 1080, height: 1920))
        #expect(faces.input.gravity == .fill)
        #expect(faces.input.mirror)
        #expect(faces.input.framePacing == .realTime)
        #expect(faces.input.regionOfInterest == CGRect(x: 0.25, y: 0.25, width: 0.5, height: 0.5))
        #expect(faces.output.json)
        #expect(faces.updateInterval == 0.5)
        let scan = try Scan.parse(["--input", "a.avi", "--types", "qr,ean13", "--once", "--repeat-interval", "5"])
        #expect(scan.types == .only([.qr, .ean13]))
        #expect(scan.once)
        #expect(scan.repeatInterval == 5)
        #expect(scan.input.framePacing == .asFastAsPossible)
    }

    func message(_ arguments: [String]) -> String {
        do {
            _ = try Faces.parseAsRoot(arguments)
            return ""
        } catch {
            return Faces.message(for: error)
        }
    }

    @Test func validationErrorsNameTheProblemAndTheAllowedValues() {
        // Typed options: ArgumentParser's message, naming the allowed values.
        #expect(
            message(["--rotate", "45"])
                == "The value '45' is invalid for '--rotate <rotate>'. Please provide one of '0', '90', '180' or '270'.")
        #expect(
            message(["--gravity", "wide"])
                == "The value 'wide' is invalid for '--gravity <gravity>'. Please provide one of 'fit', 'fill' or 'stretch'.")
        #expect(message(["--preset", "huge"]).contains("one of the following:\n  - high\n  - medium\n  - low\n  - photo\n  - 640x480"))
        #expect(message(["--size", "big"]) == "--size must look like 1280x720, each side 1 to 16384 (got 'big').")
        #expect(message(["--view", "0x10"]) == "The value '0x10' is invalid for '--view <WxH>'")
        #expect(message(["--rect-of-interest", "0.5,0.5,0.6,0.2"]).contains("x,y,w,h: four numbers in 0…1 with w and h above 0, x+w ≤ 1 and y+h ≤ 1"))
        #expect(message(["--device", "0", "--input", "a.mp4"]) == "Use either --device or --input, not both.")
        #expect(message(["--update-interval=-1"]) == "--update-interval must be 0 to 86400 seconds (got -1).")
    }

    @Test func snapPhotoSizeAndFlashParse() throws {
        let snap = try Snap.parse(["-o", "a.jpg", "--photo-size", "max", "--flash"])
        #expect(snap.photoSize == "max" && snap.flash)
        #expect(try Snap.parse(["-o", "a.jpg", "--photo-size", "1920x1080"]).photoSize == "1920x1080")
        do {
            _ = try Snap.parse(["-o", "a.jpg", "--photo-size", "huge"])
            Issue.record("expected a validation error")
        } catch {
            #expect(Snap.message(for: error) == "--photo-size must be 'max' or WxH, e.g. 1920x1080, each side 1 to 16384 (got 'huge').")
        }
    }

    @Test func usageErrorsExitWith64() {
        do {
            _ = try Faces.parseAsRoot(["--rotate", "45"])
            Issue.record("expected a validation error")
        } catch {
            #expect(Faces.exitCode(for: error).rawValue == 64)
        }
    }

    @Test func syntheticSpecs() throws {
        let scene = try SyntheticSpec.parse("size=320x240,fps=15,frames=30,qr=HELLO,qr=WORLD,background=black")
        #expect(scene.size.width == 320 && scene.size.height == 240)
        #expect(scene.frameRate == 15)
        #expect(scene.frameCount == 30)
        #expect(scene.sprites.count == 2)
        #expect(scene.background == .color(red: 0, green: 0, blue: 0))
        #expect(throws: CLIError.self) { try SyntheticSpec.parse("size=big") }
        #expect(throws: CLIError.self) { try SyntheticSpec.parse("colour=red") }
        let defaults = try SyntheticSpec.parse("")
        #expect(defaults.size.width == 640 && defaults.frameCount == nil)
    }
}

/// The built binary, end to end.
@Suite struct BinaryErrorTests {
    @Test func missingFileIsARuntimeErrorWithOneClearSentence() throws {
        let result = try CLI.run(["faces", "--input", "/nonexistent/clip.mp4"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("no file at /nonexistent/clip.mp4: check the path"))
    }

    @Test func badOptionIsAUsageError() throws {
        let result = try CLI.run(["scan", "--gravity", "wide"])
        #expect(result.status == 64)
        #expect(result.stderr.contains("The value 'wide' is invalid for '--gravity <gravity>'."))
    }

    @Test func devicesWithoutCamerasSaysWhatToDo() throws {
        let result = try CLI.run(["devices"])
        #expect(result.status == 0)
        let json = try CLI.run(["devices", "--json"])
        #expect(json.status == 0)
        let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        #expect(object?["schema"] as? Int == 1)
        #expect(object?["type"] as? String == "devices")
        let devices = object?["devices"] as? [[String: Any]] ?? []
        if devices.isEmpty {
            #expect(result.stdout.contains("No cameras found. Try the bundled demo (Tools/demo)"))
        }
    }
}
