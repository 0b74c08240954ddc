import ArgumentParser
import CaptureJobs
import CaptureKit
import Foundation

/// `cvcam controls`: one camera's controls under the names v4l2-ctl gives them, the names
/// `--set-ctrl` takes.
struct Controls: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List a camera's controls (brightness, exposure_time_absolute, …) with type, range, default and value.",
        discussion: """
            One line per control, as `v4l2-ctl --list-ctrls-menus` prints it: the name \
            --set-ctrl takes (the driver's name in lower case, other characters as `_`), the \
            V4L2 control ID, the type, then min, max, step, default, the current value and flags \
            (`inactive`: the matching automatic mode holds it); menu entries follow their control.

            Exit codes: 0 ok, 1 runtime error (no camera, or it could not be opened).
            """)

    @Option(help: "Camera by index (0 = first camera), device path (/dev/video0) or unique ID.")
    var device: String?

    @Flag(help: "Print one JSON object (schema 1) instead of text.")
    var json = false

    func run() throws {
        let camera = try InputOptions.camera(matching: device)
        let controls = try camera.controlDescriptions()
        let path = camera.source.capabilities?.devicePath ?? camera.uniqueID
        if json {
            print(EventPrinter.encode(ControlsEvent(device: path, name: camera.localizedName, controls: controls)))
            return
        }
        print(TerminalText.escaped("\(path): \(camera.localizedName)"))
        if controls.isEmpty { print("    (no controls)") }
        for control in controls {
            for line in V4L2DeviceReport.lines(for: control) { print(Self.layout(line, indent: "    ")) }
        }
    }

    /// A report line for the terminal: its leading tabs are layout (kept as tabs), the rest
    /// comes from the driver and is escaped.
    static func layout(_ line: String, indent: String) -> String {
        let tabs = line.prefix { $0 == "\t" }
        return indent + tabs + TerminalText.escaped(String(line.dropFirst(tabs.count)))
    }
}
