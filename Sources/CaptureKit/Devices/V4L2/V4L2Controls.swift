import CV4L2
import Foundation

/// Control queries and the checks before a write, on one descriptor: the one place that turns
/// `ioctl(VIDIOC_QUERY_EXT_CTRL)`, `ioctl(VIDIOC_QUERYMENU)` and `ioctl(VIDIOC_G_CTRL)` answers into
/// `CaptureDevice.ControlDescription`s and checks a value before `ioctl(VIDIOC_S_CTRL)`.
///
/// Threading: stateless; each call touches only the descriptor it is given.
enum V4L2Controls {
    static let nextControl: UInt32 = 0x8000_0000  // V4L2_CTRL_FLAG_NEXT_CTRL
    /// Types from here on are compound (`V4L2_CTRL_COMPOUND_TYPES`): their values travel by
    /// pointer through `VIDIOC_G_EXT_CTRLS`, never through `VIDIOC_G_CTRL`.
    static let compoundTypes: UInt32 = 0x0100

    static func typeName(_ type: UInt32) -> String {
        switch type {
        case 1: "int"
        case 2: "bool"
        case 3: "menu"
        case 4: "button"
        case 5: "int64"
        case 6: "ctrl_class"
        case 7: "str"
        case 8: "bitmask"
        case 9: "intmenu"
        case 0x0100: "u8"
        case 0x0101: "u16"
        case 0x0102: "u32"
        case 0x0106: "area"
        case CV4L2_CTRL_TYPE_RECT: "rect"
        default: "type\(type)"
        }
    }

    static func flagNames(_ flags: UInt32) -> [String] {
        let names: [(UInt32, String)] = [
            (0x0001, "disabled"), (0x0002, "grabbed"), (0x0004, "read-only"), (0x0008, "update"),
            (0x0010, "inactive"), (0x0020, "slider"), (0x0040, "write-only"), (0x0080, "volatile"),
            (0x0100, "has-payload"), (0x0200, "execute-on-write"), (0x0400, "modify-layout"),
            (0x0800, "dynamic-array"), (CV4L2_CTRL_FLAG_HAS_WHICH_MIN_MAX, "has-min-max"),
        ]
        return names.filter { flags & $0.0 != 0 }.map(\.1)
    }

    /// Describes a queried control, reading its menu and value.
    static func describe(_ d: V4L2Descriptor, _ q: v4l2_query_ext_ctrl) throws(V4L2Error) -> CaptureDevice.ControlDescription {
        let type = typeName(q.type)
        var menu: [CaptureDevice.ControlDescription.MenuItem] = []
        if type == "menu" || type == "intmenu", q.minimum >= 0, q.maximum < 256 {
            for index in q.minimum...q.maximum {
                guard let item = try? d.queryMenu(id: q.id, index: UInt32(index)) else { continue }
                if type == "intmenu" {
                    menu.append(.init(index: index, name: nil, value: item.value))
                } else {
                    menu.append(.init(index: index, name: String(v4l2Field: item.name), value: nil))
                }
            }
        }
        var value: Int64?
        let readable =
            q.type < compoundTypes && !["button", "ctrl_class", "str", "int64"].contains(type) && q.flags & 0x0141 == 0
        if readable { value = (try? d.getControl(id: q.id)).map(Int64.init) }
        return CaptureDevice.ControlDescription(
            control: .init(rawValue: q.id), name: String(v4l2Field: q.name),
            v4l2Name: CaptureDevice.ControlDescription.v4l2Name(String(v4l2Field: q.name)), type: type, minimum: q.minimum,
            maximum: q.maximum, step: q.step, defaultValue: q.default_value, value: value, flags: flagNames(q.flags),
            menu: menu)
    }

    /// One control, nil when the device lacks it.
    static func describe(_ d: V4L2Descriptor, _ control: CaptureDevice.Control) throws(V4L2Error)
        -> CaptureDevice.ControlDescription?
    {
        do {
            let q = try d.queryControl(id: control.rawValue)
            guard q.id == control.rawValue else { return nil }
            return try describe(d, q)
        } catch where error.errno == EINVAL {
            return nil
        }
    }

    /// Every control, walking `V4L2_CTRL_FLAG_NEXT_CTRL` | `V4L2_CTRL_FLAG_NEXT_COMPOUND` (the
    /// first flag alone skips compound controls such as the UVC region of interest).
    static func all(_ d: V4L2Descriptor) throws(V4L2Error) -> [CaptureDevice.ControlDescription] {
        var out: [CaptureDevice.ControlDescription] = []
        var id: UInt32 = 0
        while out.count < 1024 {
            let q: v4l2_query_ext_ctrl
            do { q = try d.queryControl(id: id | nextControl | CV4L2_CTRL_FLAG_NEXT_COMPOUND) } catch where error.errno == EINVAL { break }
            if q.flags & 0x0001 == 0 { out.append(try describe(d, q)) }  // skip disabled
            id = q.id
        }
        return out
    }

    /// The description of a control that must exist.
    static func require(_ d: V4L2Descriptor, _ control: CaptureDevice.Control, _ deviceName: String) throws(CaptureError)
        -> CaptureDevice.ControlDescription?
    {
        let found: CaptureDevice.ControlDescription?
        do { found = try describe(d, control) } catch { throw error.captureError }
        guard let found else {
            throw CaptureError(.unsupported, "\(deviceName) has no control \(control)")
        }
        return found
    }

    /// Checks and writes one control; returns the value the driver kept.
    static func set(_ d: V4L2Descriptor, _ control: CaptureDevice.Control, _ value: Int64, deviceName: String)
        throws(CaptureError) -> Int64
    {
        guard let c = try require(d, control, deviceName) else { return 0 }
        let label = "\(c.name) (\(control))"
        if c.flags.contains("read-only") || c.flags.contains("disabled") {
            throw CaptureError(.unsupported, "\(deviceName): \(label) cannot be set")
        }
        if c.flags.contains("has-payload") {
            throw CaptureError(
                .unsupported,
                "\(deviceName): \(label) is a compound control (\(c.type)) and takes no single value; use the CaptureKit API that owns it (e.g. setFocusPointOfInterest(_:) for the region of interest)")
        }
        if c.isInactive {
            throw CaptureError(
                .settingInactive,
                "\(deviceName): \(label) is inactive in the current mode; switch the matching automatic mode off first (e.g. setExposureMode(.custom), setFocusMode(.locked), setWhiteBalanceMode(.locked))")
        }
        if c.type == "button" {
            // Pressing a button carries no value.
        } else if c.isMenu {
            guard c.menu.contains(where: { $0.index == value }) else {
                throw CaptureError(
                    .valueOutOfRange,
                    "\(deviceName): \(value) is not an entry of \(label); entries: \(c.menu.map { String($0.index) }.joined(separator: ", "))")
            }
        } else if value < c.minimum || value > c.maximum {
            throw CaptureError(
                .valueOutOfRange, "\(deviceName): \(value) is outside \(label)'s range \(c.minimum)…\(c.maximum)")
        }
        do {
            return Int64(try d.setControl(id: control.rawValue, value: Int32(clamping: value)))
        } catch {
            throw error.captureError
        }
    }
}
