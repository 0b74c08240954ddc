import CV4L2
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// An open V4L2 device node and the ioctls the backend issues on it, each retried on EINTR and
/// failing with a `V4L2Error` that names the call. All calls go through `system`.
///
/// Public as an opaque handle only (`DeviceCapabilities.withControlDescriptor` hands one to
/// CaptureKit's control code); its calls stay internal.
///
/// Threading: the kernel serialises ioctls on one descriptor, so calls may come from any
/// thread; closing is the owner's job (`close()`, once, when no other call can be running).
public struct V4L2Descriptor: Sendable {
    let fd: Int32
    let path: String
    let system: V4L2SystemCalls

    /// Opens `path`. The corresponding C functions are `open(2)` and `v4l2_fd_open`.
    static func open(_ path: String, system: V4L2SystemCalls) throws(V4L2Error) -> V4L2Descriptor {
        while true {
            let fd = system.openDevice(path)
            if fd >= 0 { return V4L2Descriptor(fd: fd, path: path, system: system) }
            let error = errno
            if error != EINTR { throw V4L2Error(.open, errno: error, path: path) }
        }
    }

    /// The corresponding C function is `v4l2_close`.
    func close() { _ = system.close(fd) }

    /// Issues one ioctl on a value, retrying on EINTR. The corresponding C function is
    /// `v4l2_ioctl(request)`.
    func ioctl<T>(_ request: UInt, _ operation: V4L2Error.Operation, _ value: inout T) throws(V4L2Error) {
        while true {
            let result = withUnsafeMutableBytes(of: &value) { system.ioctl(fd, request, $0.baseAddress!) }
            if result >= 0 { return }
            let error = errno
            if error != EINTR { throw V4L2Error(operation, errno: error, path: path) }
        }
    }

    /// The corresponding C function is `ioctl(VIDIOC_QUERYCAP)`.
    func queryCapabilities() throws(V4L2Error) -> v4l2_capability {
        var cap = v4l2_capability()
        try ioctl(CV4L2_VIDIOC_QUERYCAP, .queryCapabilities, &cap)
        return cap
    }

    /// Every pixel format of the capture queue. The corresponding C function is
    /// `ioctl(VIDIOC_ENUM_FMT)`, called with rising indices until EINVAL.
    func enumerateFormats() throws(V4L2Error) -> [v4l2_fmtdesc] {
        var out: [v4l2_fmtdesc] = []
        for index in 0..<UInt32(64) {
            var desc = v4l2_fmtdesc()
            desc.index = index
            desc.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
            do { try ioctl(CV4L2_VIDIOC_ENUM_FMT, .enumerateFormats, &desc) } catch where error.errno == EINVAL { break }
            out.append(desc)
        }
        return out
    }

    /// Frame sizes of one pixel format. The corresponding C function is
    /// `ioctl(VIDIOC_ENUM_FRAMESIZES)`.
    func enumerateFrameSizes(pixelFormat: UInt32) throws(V4L2Error) -> [v4l2_frmsizeenum] {
        var out: [v4l2_frmsizeenum] = []
        for index in 0..<UInt32(256) {
            var size = v4l2_frmsizeenum()
            size.index = index
            size.pixel_format = pixelFormat
            do { try ioctl(CV4L2_VIDIOC_ENUM_FRAMESIZES, .enumerateFrameSizes, &size) } catch where error.errno == EINVAL { break }
            out.append(size)
            if size.type != V4L2_FRMSIZE_TYPE_DISCRETE.rawValue { break }  // one stepwise entry says it all
        }
        return out
    }

    /// Frame intervals of one pixel format and size. The corresponding C function is
    /// `ioctl(VIDIOC_ENUM_FRAMEINTERVALS)`.
    func enumerateFrameIntervals(pixelFormat: UInt32, width: UInt32, height: UInt32) throws(V4L2Error)
        -> [v4l2_frmivalenum]
    {
        var out: [v4l2_frmivalenum] = []
        for index in 0..<UInt32(256) {
            var interval = v4l2_frmivalenum()
            interval.index = index
            interval.pixel_format = pixelFormat
            interval.width = width
            interval.height = height
            do { try ioctl(CV4L2_VIDIOC_ENUM_FRAMEINTERVALS, .enumerateFrameIntervals, &interval) } catch where error.errno == EINVAL { break }
            out.append(interval)
            if interval.type != V4L2_FRMIVAL_TYPE_DISCRETE.rawValue { break }
        }
        return out
    }

    /// The current capture format. The corresponding C function is `ioctl(VIDIOC_G_FMT)`.
    func getFormat() throws(V4L2Error) -> v4l2_pix_format {
        var format = v4l2_format()
        format.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        try ioctl(CV4L2_VIDIOC_G_FMT, .getFormat, &format)
        return format.fmt.pix
    }

    /// Asks for a format and returns what the driver chose. The corresponding C function is
    /// `ioctl(VIDIOC_S_FMT)`.
    func setFormat(pixelFormat: UInt32, width: Int, height: Int) throws(V4L2Error) -> v4l2_pix_format {
        var format = v4l2_format()
        format.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        format.fmt.pix.pixelformat = pixelFormat
        format.fmt.pix.width = UInt32(width)
        format.fmt.pix.height = UInt32(height)
        format.fmt.pix.field = V4L2_FIELD_NONE.rawValue
        try ioctl(CV4L2_VIDIOC_S_FMT, .setFormat, &format)
        return format.fmt.pix
    }

    /// The current frame interval, nil when the driver does not report one. The corresponding
    /// C function is `ioctl(VIDIOC_G_PARM)`.
    func getFrameInterval() throws(V4L2Error) -> v4l2_fract? {
        var parm = v4l2_streamparm()
        parm.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        try ioctl(CV4L2_VIDIOC_G_PARM, .getParameters, &parm)
        let f = parm.parm.capture.timeperframe
        return f.numerator == 0 || f.denominator == 0 ? nil : f
    }

    /// Asks for a frame interval and returns what the driver chose (nil when the driver cannot
    /// set it). The corresponding C function is `ioctl(VIDIOC_S_PARM)`.
    func setFrameInterval(_ interval: v4l2_fract) throws(V4L2Error) -> v4l2_fract? {
        var parm = v4l2_streamparm()
        parm.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        parm.parm.capture.timeperframe = interval
        try ioctl(CV4L2_VIDIOC_S_PARM, .setParameters, &parm)
        let f = parm.parm.capture.timeperframe
        return f.numerator == 0 || f.denominator == 0 ? nil : f
    }

    /// Describes a control (`V4L2_CTRL_FLAG_NEXT_CTRL` in `id` asks for the next one). The
    /// corresponding C function is `ioctl(VIDIOC_QUERY_EXT_CTRL)`, falling back to
    /// `ioctl(VIDIOC_QUERYCTRL)` on drivers without it.
    func queryControl(id: UInt32) throws(V4L2Error) -> v4l2_query_ext_ctrl {
        var ext = v4l2_query_ext_ctrl()
        ext.id = id
        do {
            try ioctl(CV4L2_VIDIOC_QUERY_EXT_CTRL, .queryControl, &ext)
            return ext
        } catch where error.errno == ENOTTY {
            var q = v4l2_queryctrl()
            q.id = id & ~CV4L2_CTRL_FLAG_NEXT_COMPOUND  // VIDIOC_QUERYCTRL lists no compound controls
            try ioctl(CV4L2_VIDIOC_QUERYCTRL, .queryControl, &q)
            ext = v4l2_query_ext_ctrl()
            ext.id = q.id
            ext.type = q.type
            withUnsafeMutableBytes(of: &ext.name) { dst in
                withUnsafeBytes(of: q.name) { src in dst.copyMemory(from: UnsafeRawBufferPointer(rebasing: src.prefix(dst.count))) }
            }
            ext.minimum = Int64(q.minimum)
            ext.maximum = Int64(q.maximum)
            ext.step = UInt64(max(q.step, 0))
            ext.default_value = Int64(q.default_value)
            ext.flags = q.flags
            return ext
        }
    }

    /// One menu item of a menu or integer-menu control. The corresponding C function is
    /// `ioctl(VIDIOC_QUERYMENU)`.
    func queryMenu(id: UInt32, index: UInt32) throws(V4L2Error) -> v4l2_querymenu {
        var item = v4l2_querymenu()
        item.id = id
        item.index = index
        try ioctl(CV4L2_VIDIOC_QUERYMENU, .queryMenu, &item)
        return item
    }

    /// The corresponding C function is `ioctl(VIDIOC_G_CTRL)`.
    func getControl(id: UInt32) throws(V4L2Error) -> Int32 {
        var control = v4l2_control(id: id, value: 0)
        try ioctl(CV4L2_VIDIOC_G_CTRL, .getControl, &control)
        return control.value
    }

    /// Sets a control and returns the value the driver kept. The corresponding C function is
    /// `ioctl(VIDIOC_S_CTRL)`.
    func setControl(id: UInt32, value: Int32) throws(V4L2Error) -> Int32 {
        var control = v4l2_control(id: id, value: value)
        try ioctl(CV4L2_VIDIOC_S_CTRL, .setControl, &control)
        return control.value
    }
}

/// The value of one control in a `VIDIOC_G_EXT_CTRLS` / `VIDIOC_S_EXT_CTRLS` call: a 32-bit
/// integer (integers, booleans, menus, bitmasks) or a rectangle (`V4L2_CTRL_TYPE_RECT`, passed by
/// pointer with `size` = `sizeof(struct v4l2_rect)`).
///
/// Value type; thread-safe.
enum V4L2ExtendedValue: Equatable, Sendable {
    case integer(Int32)
    case rect(left: Int32, top: Int32, width: UInt32, height: UInt32)
}

extension V4L2Descriptor {
    /// Reads several controls in one call; `which` is `V4L2_CTRL_WHICH_CUR_VAL` (the current
    /// values), `_MIN_VAL` or `_MAX_VAL`. Each entry's value only says its kind. The
    /// corresponding C function is `ioctl(VIDIOC_G_EXT_CTRLS)`.
    func getExtendedControls(_ controls: [(id: UInt32, kind: V4L2ExtendedValue)], which: UInt32 = CV4L2_CTRL_WHICH_CUR_VAL)
        throws(V4L2Error) -> [V4L2ExtendedValue]
    {
        try extendedControls(CV4L2_VIDIOC_G_EXT_CTRLS, .getExtendedControls, controls, which: which)
    }

    /// Sets several controls in one call (drivers apply them together: uvcvideo sends the
    /// region-of-interest rectangle and its auto controls as one UVC request) and returns the
    /// values the driver kept. The corresponding C function is `ioctl(VIDIOC_S_EXT_CTRLS)`.
    func setExtendedControls(_ controls: [(id: UInt32, kind: V4L2ExtendedValue)]) throws(V4L2Error) -> [V4L2ExtendedValue] {
        try extendedControls(CV4L2_VIDIOC_S_EXT_CTRLS, .setExtendedControls, controls, which: CV4L2_CTRL_WHICH_CUR_VAL)
    }

    private func extendedControls(
        _ request: UInt, _ operation: V4L2Error.Operation, _ controls: [(id: UInt32, kind: V4L2ExtendedValue)], which: UInt32
    ) throws(V4L2Error) -> [V4L2ExtendedValue] {
        // Rectangles live in one array the entries point into, alive for the whole call.
        var rects = controls.map { entry -> v4l2_rect in
            guard case .rect(let left, let top, let width, let height) = entry.kind else { return v4l2_rect() }
            return v4l2_rect(left: left, top: top, width: width, height: height)
        }
        var entries = [v4l2_ext_control](repeating: v4l2_ext_control(), count: controls.count)
        let result: Result<Void, V4L2Error> = rects.withUnsafeMutableBufferPointer { rectBuffer in
            for (i, entry) in controls.enumerated() {
                entries[i].id = entry.id
                switch entry.kind {
                case .integer(let value):
                    entries[i].value = value
                case .rect:
                    entries[i].size = UInt32(MemoryLayout<v4l2_rect>.size)
                    entries[i].ptr = UnsafeMutableRawPointer(rectBuffer.baseAddress! + i)
                }
            }
            return entries.withUnsafeMutableBufferPointer { entryBuffer in
                var list = v4l2_ext_controls()
                list.which = which
                list.count = UInt32(controls.count)
                list.controls = entryBuffer.baseAddress
                do throws(V4L2Error) {
                    try ioctl(request, operation, &list)
                    return .success(())
                } catch {
                    return .failure(error)
                }
            }
        }
        try result.get()
        return controls.enumerated().map { i, entry in
            switch entry.kind {
            case .integer: .integer(entries[i].value)
            case .rect: .rect(left: rects[i].left, top: rects[i].top, width: rects[i].width, height: rects[i].height)
            }
        }
    }
}

/// Four-character codes as V4L2 packs them (little-endian: "YUYV" is 'Y' | 'U'<<8 | ...).
enum FourCC {
    static func code(_ text: String) -> UInt32 {
        var value: UInt32 = 0
        for (i, byte) in text.utf8.prefix(4).enumerated() { value |= UInt32(byte) << (8 * UInt32(i)) }
        return value
    }

    static func text(_ code: UInt32) -> String {
        let bytes = (0..<4).map { UInt8((code >> (8 * UInt32($0))) & 0xff) }
        return String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespaces)
    }
}

extension String {
    /// A C string stored in a fixed-size tuple field (`v4l2_capability.card`, ...).
    init<T>(v4l2Field field: T) {
        self = withUnsafeBytes(of: field) { raw in String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self) }
    }
}
