import CaptureKit
import Foundation
import Synchronization
import Testing
import AppTestSupport

/// The camera side of the CLI end to end, against the emulated V4L2 camera preloaded into the
/// cvcam child only: format choice and the printed negotiation, --set-ctrl, `cvcam controls`,
/// busy and permission errors, and unplug events.
@Suite(.serialized) struct CameraCLITests {

    func json(_ line: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not JSON: \(line)")
    }

    func event(_ result: CLI.Result, _ type: String) throws -> [String: Any] {
        try #require(try result.lines.map(json).first { $0["type"] as? String == type }, "no \(type) in \(result.stdout)")
    }

    // MARK: Formats

    @Test func aSizeStreamsItsFastestFormatAndTheStartLineAndSummarySayWhichOne() throws {
        let emu = try EmulatedCamera()
        defer { emu.remove() }
        let out = emu.dir.appendingPathComponent("door.jpg").path

        // The camera lists YUYV 1280x720 (10 fps) first; MJPG reaches 30.
        let sized = try emu.run(["snap", "-o", out, "--size", "1280x720", "--json"] + EmulatedCamera.device)
        #expect(sized.status == 0, "\(sized.stderr)")
        let format = try event(sized, "format")
        #expect(format["device"] as? String == "/dev/video-emulated0")
        #expect(format["fourCC"] as? String == "MJPG" && format["width"] as? Int == 1280 && format["height"] as? Int == 720)
        #expect(format["fps"] as? Double == 30 && format["adjusted"] as? Bool == false && format["requested"] == nil)
        // The start line, then the negotiated format.
        #expect(sized.lines.prefix(2).map { (try? json($0))?["type"] as? String } == ["start", "format"])
        let input = try #require(try event(sized, "summary")["input"] as? [String: Any])
        #expect(input["format"] as? String == "MJPG 1280x720@30" && input["adjusted"] as? Bool == false)
        #expect(try event(sized, "snapshot")["width"] as? Int == 1280)

        let text = try emu.run(["snap", "-o", out, "--overwrite", "--size", "1280x720", "--fps", "30"] + EmulatedCamera.device)
        #expect(text.status == 0, "\(text.stderr)")
        // In text the format and the summary are diagnostics, on stderr with the start line.
        let diagnostics = text.stderr.split(separator: "\n").map(String.init)
        #expect(diagnostics.contains("format: /dev/video-emulated0 Emulated Camera: MJPG 1280x720@30"), "\(text.stderr)")
        #expect(diagnostics.last?.hasSuffix("photos written, camera MJPG 1280x720@30") == true, "\(text.stderr)")

        let raw = try emu.run(["snap", "-o", out, "--overwrite", "--size", "1280x720", "--pixel-format", "yuyv"] + EmulatedCamera.device)
        #expect(raw.status == 0, "\(raw.stderr)")
        #expect(raw.stderr.contains("format: /dev/video-emulated0 Emulated Camera: YUYV 1280x720@10\n"), "\(raw.stderr)")

        let quiet = try emu.run(["snap", "-o", out, "--overwrite", "-q", "--size", "640x480"] + EmulatedCamera.device)
        #expect(quiet.status == 0 && !quiet.stdout.contains("format:"), "\(quiet.stdout)")
    }

    @Test func aFormatNoneOffersIsRefusedWithWhatTheCameraHas() throws {
        let emu = try EmulatedCamera()
        defer { emu.remove() }
        let out = emu.dir.appendingPathComponent("x.jpg")
        let fast = try emu.run(["snap", "-o", out.path, "--size", "1280x720", "--fps", "60"] + EmulatedCamera.device)
        #expect(fast.status == 1)
        #expect(fast.stderr.contains("cannot stream 1280x720 at 60 fps"), "\(fast.stderr)")
        #expect(fast.stderr.contains("YUYV 1280x720 @ 10 fps, 5 fps; MJPG 1280x720 @ 30 fps, 15 fps"), "\(fast.stderr)")
        let grey = try emu.run(["snap", "-o", out.path, "--pixel-format", "grey"] + EmulatedCamera.device)
        #expect(grey.status == 1)
        #expect(grey.stderr.contains("no GREY format; its formats are YUYV, MJPG"), "\(grey.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out.path))

        // Typed: the allowed values are in --help, anything else is a usage error, as is a file input.
        let help = try CLI.run(["faces", "--help"])
        #expect(help.stdout.contains("--pixel-format <pixel-format>"))
        let unwrapped = help.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(unwrapped.contains("values: mjpg, yuyv, nv12, grey"), "\(help.stdout)")
        #expect(try CLI.run(["faces", "--pixel-format", "h264"] + EmulatedCamera.device).status == 64)
        let file = try CLI.run(["faces", "--pixel-format", "mjpg", "--input", CLI.fixture("images")])
        #expect(file.status == 64 && file.stderr.contains("apply to cameras"), "\(file.stderr)")
    }

    @Test func aRateTheDriverLowersIsPrintedAsAdjusted() throws {
        let emu = try EmulatedCamera()
        defer { emu.remove() }
        try emu.faults("max-fps 15")
        let out = emu.dir.appendingPathComponent("x.jpg").path
        let text = try emu.run(["snap", "-o", out, "--size", "1280x720", "--fps", "30"] + EmulatedCamera.device)
        #expect(text.status == 0, "\(text.stderr)")
        let diagnostics = text.stderr.split(separator: "\n").map(String.init)
        #expect(
            diagnostics.contains(
                "format: /dev/video-emulated0 Emulated Camera: MJPG 1280x720@15 (requested MJPG 1280x720@30; adjusted by the driver)"),
            "\(text.stderr)")
        #expect(
            diagnostics.last?.hasSuffix("camera requested MJPG 1280x720@30, got MJPG 1280x720@15 (adjusted by the driver)") == true,
            "\(text.stderr)")
        let json = try emu.run(["snap", "-o", out, "--overwrite", "--size", "1280x720", "--fps", "30", "--json"] + EmulatedCamera.device)
        let format = try event(json, "format")
        #expect(format["fps"] as? Double == 15 && format["adjusted"] as? Bool == true)
        #expect(format["requested"] as? String == "MJPG 1280x720@30")
        #expect((try event(json, "summary")["input"] as? [String: Any])?["adjusted"] as? Bool == true)
    }

    // MARK: Controls

    @Test func setCtrlWritesNamedControlsInOrderBeforeTheFirstFrame() throws {
        let emu = try EmulatedCamera()
        defer { emu.remove() }
        try emu.faults("control-log")
        let out = emu.dir.appendingPathComponent("door.jpg").path
        let result = try emu.run(
            ["snap", "-o", out, "--json", "--set-ctrl", "brightness=10, contrast=60", "--set-ctrl",
             "auto_exposure=1,exposure_time_absolute=250"] + EmulatedCamera.device)
        #expect(result.status == 0, "\(result.stderr)")
        let writes = try String(contentsOf: emu.log, encoding: .utf8).split(separator: "\n").map { $0.split(separator: " ") }
        let hex = { (c: CaptureDevice.Control) in String(format: "0x%08x", c.rawValue) }
        #expect(
            writes.map { "\($0[1])=\($0[2])" }
                == ["\(hex(.brightness))=10", "\(hex(.contrast))=60", "\(hex(.exposureAuto))=1", "\(hex(.exposureAbsolute))=250"])
        // The log's clock is the frames' (CLOCK_MONOTONIC): every write came before the photo's frame.
        let frameTime = try #require(try event(result, "snapshot")["time"] as? Double)
        #expect(writes.allSatisfy { (Double($0[0]) ?? .infinity) / 1e6 < frameTime })
    }

    @Test func setCtrlRefusesUnknownNamesAndValuesOutsideTheRangeAsUsageErrors() throws {
        let emu = try EmulatedCamera()
        defer { emu.remove() }
        try emu.faults("control-log")
        let out = emu.dir.appendingPathComponent("x.jpg")
        let cases: [(String, [String])] = [
            ("brightnes=10", ["has no control 'brightnes'", "brightness, contrast"]),
            ("brightness=100", ["brightness=100 is out of range; allowed: -64…64"]),
            ("auto_exposure=2", ["2 is not an entry of auto_exposure; allowed: 1 (Manual Mode), 3 (Aperture Priority Mode)"]),
            ("exposure_time_absolute=250", ["exposure_time_absolute is inactive", "auto_exposure=1"]),
            ("brightness", ["--set-ctrl"]),
            ("brightness=ten", ["--set-ctrl"]),
        ]
        for (argument, phrases) in cases {
            let result = try emu.run(["snap", "-o", out.path, "--set-ctrl", argument] + EmulatedCamera.device)
            #expect(result.status == 64, "\(argument): \(result.stderr)")
            for phrase in phrases { #expect(result.stderr.contains(phrase), "\(argument): \(result.stderr)") }
        }
        #expect(!FileManager.default.fileExists(atPath: emu.log.path), "a refused run wrote a control")
        #expect(!FileManager.default.fileExists(atPath: out.path))
        let file = try CLI.run(["faces", "--set-ctrl", "brightness=1", "--input", CLI.fixture("images")])
        #expect(file.status == 64)
    }

    @Test func controlsListsV4L2CtlNamesWithRangesValuesAndMenus() throws {
        let emu = try EmulatedCamera()
        defer { emu.remove() }
        let text = try emu.run(["controls"] + EmulatedCamera.device)
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.lines.first == "/dev/video-emulated0: Emulated Camera")
        #expect(text.lines.contains("    brightness 0x00980900 (int) : min=-64 max=64 step=1 default=0 value=0"))
        #expect(text.lines.contains(
            "    exposure_time_absolute 0x009a0902 (int) : min=3 max=2047 step=1 default=166 value=166 flags=inactive"))
        let menu = try #require(text.lines.firstIndex { $0.hasPrefix("    power_line_frequency 0x00980918 (menu)") })
        #expect(Array(text.lines[(menu + 1)...(menu + 3)]) == ["    \t0: Disabled", "    \t1: 50 Hz", "    \t2: 60 Hz"])
        // A compound control (the UVC region of interest) is listed with its type and flags only.
        #expect(text.lines.contains("    region_of_interest_rectangle 0x00981ae1 (rect) flags=has-payload, has-min-max"))
        #expect(text.lines.contains("    region_of_interest_auto_ctrls 0x00981ae2 (bitmask) : min=0 max=255 step=0 default=1 value=1"))

        let json = try emu.run(["controls", "--json"] + EmulatedCamera.device)
        #expect(json.status == 0 && json.lines.count == 1)
        let object = try self.json(json.stdout)
        #expect(object["type"] as? String == "controls" && object["device"] as? String == "/dev/video-emulated0")
        let controls = try #require(object["controls"] as? [[String: Any]])
        let brightness = try #require(controls.first { $0["v4l2Name"] as? String == "brightness" })
        #expect(brightness["minimum"] as? Int == -64 && brightness["maximum"] as? Int == 64 && brightness["value"] as? Int == 0)
        #expect(brightness["type"] as? String == "int" && brightness["defaultValue"] as? Int == 0)
        let names = controls.compactMap { $0["v4l2Name"] as? String }
        #expect(names.contains("exposure_time_absolute") && names.contains("white_balance_automatic"))
        let region = try #require(controls.first { $0["v4l2Name"] as? String == "region_of_interest_rectangle" })
        #expect(region["type"] as? String == "rect" && region["value"] == nil)

        let devices = try emu.run(["devices", "--json"])
        let listed = try #require(try self.json(devices.stdout)["devices"] as? [[String: Any]])
        let report = try #require(listed.first?["v4l2"] as? [String: Any])
        let reported = (report["controls"] as? [[String: Any]] ?? []).compactMap { $0["v4l2Name"] as? String }
        #expect(reported == names)
    }

    // MARK: Busy and permission

    @Test func aCameraThisUserMayNotOpenOrAnotherProgramHoldsSaysSo() throws {
        let emu = try EmulatedCamera()
        defer { emu.remove() }
        let cases: [(fault: String, phrases: [String], selectors: [[String]])] = [
            ("eacces", ["permission denied", "add the user to the `video` group"], [[], EmulatedCamera.device, ["--device", "0"]]),
            ("busy", ["busy", "in use by another process"], [[], EmulatedCamera.device, ["--device", "0"]]),
            // uvcvideo opens a camera another program streams from, then refuses its format.
            ("busy-streaming", ["busy", "VIDIOC_S_FMT"], [EmulatedCamera.device]),
        ]
        for (fault, phrases, selectors) in cases {
            try emu.faults(fault)
            for selector in selectors {
                let result = try emu.run(["scan"] + selector)
                #expect(result.status == 1, "\(fault) \(selector): \(result.stderr)")
                for phrase in phrases { #expect(result.stderr.contains(phrase), "\(fault) \(selector): \(result.stderr)") }
                #expect(!result.stderr.contains("No camera"), "\(fault) \(selector): \(result.stderr)")
            }
        }
    }

    // MARK: Unplug

    @Test(arguments: [true, false])
    func anUnplugIsPrintedAtOnceItsEndTooAndCtrlCStillExitsZero(json: Bool) throws {
        let emu = try EmulatedCamera()
        defer { emu.remove() }
        try emu.faults("unplug-after 10")
        let run = try RunningCLI(["scan", "--size", "640x480"] + EmulatedCamera.device + (json ? ["--json"] : []), environment: emu.environment)
        defer { run.kill() }
        let interrupted = json ? "\"type\":\"interrupted\"" : "interrupted: "
        let ended = json ? "\"type\":\"interruptionEnded\"" : "interruptionEnded: "
        // 10 frames at 30 fps, then the camera is gone: reported within a second or two.
        #expect(run.waitForLine(containing: interrupted, timeout: 5) != nil, "\(run.output)")
        #expect(run.output.filter { $0.contains(ended) }.isEmpty)
        emu.clearFaults()  // plugged back in
        #expect(run.waitForLine(containing: ended, timeout: 5) != nil, "\(run.output)")
        // Frames flow again: the second unplug never comes, and Ctrl-C ends the run cleanly.
        Thread.sleep(forTimeInterval: 0.5)
        run.interrupt()
        let status = run.wait()
        #expect(status == 0, "\(run.output) \(run.errorOutput)")
        // JSON: every event on stdout; text: the summary is a diagnostic, on stderr.
        let summary = try #require(json ? run.output.last : run.errorOutput.split(separator: "\n").last.map(String.init))
        #expect(json ? summary.contains("\"type\":\"summary\"") : summary.hasPrefix("summary: "), "\(summary)")
        #expect(!run.output.contains { $0.contains("error") }, "\(run.output)")
    }

    @Test func ctrlCWhileTheCameraIsStillGoneExitsZero() throws {
        let emu = try EmulatedCamera()
        defer { emu.remove() }
        try emu.faults("unplug-after 5")
        let run = try RunningCLI(["scan", "--size", "640x480"] + EmulatedCamera.device, environment: emu.environment)
        defer { run.kill() }
        #expect(run.waitForLine(containing: "interrupted: ", timeout: 5) != nil, "\(run.output)")
        run.interrupt()
        #expect(run.wait() == 0, "\(run.output) \(run.errorOutput)")
        #expect(run.errorOutput.split(separator: "\n").last?.hasPrefix("summary: ") == true, "\(run.errorOutput)")
    }
}

