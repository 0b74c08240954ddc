import ArgumentParser
import CaptureKit
import Foundation

// What a capturing command asks of a camera: the format (--size, --fps, --pixel-format) and
// control values (--set-ctrl), applied after the camera is found and before it streams; and the
// reason, when no camera could be used, that the user can act on.

/// `--pixel-format`: the V4L2 pixel formats cvcam can stream, by their lower-case fourCC.
package enum CameraPixelFormat: String, CaseIterable, ExpressibleByArgument, Sendable {
    /// Motion-JPEG, decoded by cvcam: what webcams offer at large sizes and full rate.
    case mjpg
    /// YUYV 4:2:2, raw: no decoding, but a USB link carries fewer of them per second.
    case yuyv
    /// NV12 (Y plane, interleaved UV), raw.
    case nv12
    /// 8-bit grey.
    case grey

    /// The four-character code V4L2 uses.
    package var fourCC: String { rawValue.uppercased() }
}

/// `--set-ctrl name=value[,name=value…]`: control writes by v4l2-ctl name, in the given order.
package struct ControlAssignments: ExpressibleByArgument, Equatable, Sendable {
    package struct Assignment: Equatable, Sendable {
        package var name: String
        package var value: Int64

        /// Creates the value from each of its properties.
        package init(name: String, value: Int64) {
            self.name = name
            self.value = value
        }
    }
    package var assignments: [Assignment]

    package init?(argument: String) {
        var list: [Assignment] = []
        for item in argument.split(separator: ",", omittingEmptySubsequences: false) {
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = parts.first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
            guard parts.count == 2, !name.isEmpty,
                let value = Int64(parts[1].trimmingCharacters(in: .whitespaces))
            else { return nil }
            list.append(Assignment(name: name, value: value))
        }
        assignments = list
    }

    package var defaultValueDescription: String { assignments.map { "\($0.name)=\($0.value)" }.joined(separator: ",") }
}

extension InputOptions {
    /// The format the options ask for, nil when they ask for none. The rate counts for cameras
    /// only (image folders take --fps as their own rate).
    package func formatRequest(for device: CaptureDevice) -> CaptureDevice.FormatRequest? {
        let dimensions = size.flatMap(Self.parseSize)
        let rate = device.deviceType == .external ? fps : nil
        guard dimensions != nil || rate != nil || pixelFormat != nil else { return nil }
        return CaptureDevice.FormatRequest(dimensions: dimensions, framesPerSecond: rate, mediaSubType: pixelFormat?.fourCC)
    }

    /// Makes the requested format active (the fastest that reaches --size, --fps and
    /// --pixel-format together) and writes --set-ctrl's controls, under the device's
    /// configuration lock.
    ///
    /// - Throws: `CaptureError` `.formatNotSupported` (what the camera offers instead; exit 1);
    ///   exit 64 (the message printed) for a control the camera lacks, a value outside its
    ///   range, or one its automatic mode holds.
    package func applyCameraSettings(to device: CaptureDevice) throws {
        let request = formatRequest(for: device)
        guard request != nil || !setCtrl.isEmpty else { return }
        try device.lockForConfiguration()
        defer { device.unlockForConfiguration() }
        if let request {
            let choice = try device.format(for: request)
            try device.setActiveFormat(choice.format)
            if device.deviceType == .external { try device.setActiveVideoMinFrameDuration(choice.frameDuration) }
        }
        for assignment in setCtrl.flatMap(\.assignments) { try Self.write(assignment, to: device) }
    }

    /// One --set-ctrl write, checked against the camera's own description of the control.
    private static func write(_ assignment: ControlAssignments.Assignment, to device: CaptureDevice) throws {
        let name = assignment.name
        guard let control = try device.control(named: name) else {
            let known = ((try? device.controlDescriptions()) ?? []).filter { $0.type != "ctrl_class" }.map(\.v4l2Name)
            throw Self.usageError(
                "--set-ctrl: \(device.localizedName) has no control '\(name)'; its controls are \(known.joined(separator: ", ")) (see `cvcam controls`).")
        }
        let value = assignment.value
        if control.flags.contains("read-only") || control.type == "ctrl_class" {
            throw Self.usageError("--set-ctrl: \(control.v4l2Name) is read-only.")
        }
        if control.isMenu {
            guard control.menu.contains(where: { $0.index == value }) else {
                let entries = control.menu.map { "\($0.index) (\($0.name ?? $0.value.map(String.init) ?? ""))" }
                throw Self.usageError(
                    "--set-ctrl: \(value) is not an entry of \(control.v4l2Name); allowed: \(entries.joined(separator: ", ")).")
            }
        } else if control.type != "button" && (value < control.minimum || value > control.maximum) {
            throw Self.usageError(
                "--set-ctrl: \(control.v4l2Name)=\(value) is out of range; allowed: \(control.minimum)…\(control.maximum)\(control.step > 1 ? " in steps of \(control.step)" : "").")
        }
        if control.isInactive {
            throw Self.usageError(
                "--set-ctrl: \(control.v4l2Name) is inactive while its automatic mode is on; switch that mode to manual earlier in the same list (e.g. --set-ctrl auto_exposure=1,exposure_time_absolute=250).")
        }
        try device.setValue(value, for: control.control)
    }

    /// A --set-ctrl the camera refuses: printed (escaped: control names come from the driver)
    /// and exit 64, without ArgumentParser's usage line, which would name no subcommand here.
    package static func usageError(_ message: String) -> ExitCode {
        TerminalText.printError("Error: " + message)
        return ExitCode(ExitStatus.usage)
    }

    /// Why no camera could be used, when the node the user named, or any node at all, exists
    /// but could not be opened (permission denied, busy); nil when there is no such node.
    package static func cameraUnavailable(matching selector: String?) -> CaptureError? {
        let unavailable = V4L2Discovery.survey().unavailable
        guard let selector, selector.hasPrefix("/") else { return unavailable.first }
        let node = URL(fileURLWithPath: selector).resolvingSymlinksInPath().path
        if let named = unavailable.first(where: { $0.path == node || $0.path == selector }) { return named }
        // A node outside discovery's list (not /dev/video*): open it to learn why it failed.
        do { _ = try CaptureDevice(v4l2Path: node) } catch where error.code != .deviceDisconnected {
            return error
        } catch {}
        return nil
    }
}
