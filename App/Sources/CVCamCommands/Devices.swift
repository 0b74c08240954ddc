import ArgumentParser
import CaptureJobs
import CaptureKit
import Foundation

/// `cvcam devices`: the cameras this machine has, in the detail of
/// `v4l2-ctl --all --list-formats-ext`.
struct Devices: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List cameras with their formats, frame sizes and rates, and controls.",
        discussion: """
            For each V4L2 capture node: name, path, unique ID (the bus path, stable across \
            reboots), driver, formats with every frame size and frame interval, and every \
            control with its range, default, current value, menu entries and flags.

            Besides cameras, every capturing command takes --input with a video file (MP4, MKV, \
            AVI), an image, a folder of images, or synthetic:SPEC (a generated scene; see \
            `cvcam help faces`). Those are not listed here.

            Exit codes: 0 ok (also when no camera exists), 1 runtime error.
            """)

    @Flag(help: "Print one JSON object (schema 1) instead of text.")
    var json = false

    func run() throws {
        let cameras = CaptureDevice.DiscoverySession(deviceTypes: [.external], mediaType: .video, position: .unspecified)
            .devices
        var reports: [(CaptureDevice, V4L2DeviceReport?)] = []
        for device in cameras { reports.append((device, try? device.v4l2Report())) }
        if json {
            let list = reports.enumerated().map { index, entry in
                DevicesEvent.Device(
                    index: index, name: entry.0.localizedName, uniqueID: entry.0.uniqueID,
                    position: entry.0.position.rawValue, v4l2: entry.1)
            }
            print(EventPrinter.encode(DevicesEvent(devices: list)))
            return
        }
        if cameras.isEmpty {
            print("No cameras found. Try the bundled demo (Tools/demo) or --input FILE|FOLDER|synthetic:SPEC.")
            return
        }
        for (index, (device, report)) in reports.enumerated() {
            print("[\(index)] \(TerminalText.escaped(device.localizedName))")
            print("    unique ID: \(TerminalText.escaped(device.uniqueID))")
            if let report {
                print(report.text.split(separator: "\n", omittingEmptySubsequences: false).map { Controls.layout(String($0), indent: "    ") }.joined(separator: "\n"))
            } else {
                for format in device.formats { print("    \(format)") }
            }
        }
    }
}
