import CV4L2
import Foundation

/// Everything a V4L2 node says about itself, for `cvcam devices`: capabilities, every format
/// with its sizes and frame intervals, the current format and rate, and every control with its
/// range, default, current value, menu and flags (the detail of
/// `v4l2-ctl --all --list-formats-ext`). Printable as text (`text`) or JSON (Codable).
///
/// Value type; thread-safe.
public struct V4L2DeviceReport: Sendable, Hashable, Codable {
    /// One frame size and its frame intervals.
    public struct FrameSize: Sendable, Hashable, Codable {
        /// Width in pixels (the smallest, for ranges).
        public var width: Int
        /// Height in pixels (the smallest, for ranges).
        public var height: Int
        /// "discrete", or "stepwise"/"continuous" with `maximumWidth`/`maximumHeight`/steps.
        public var kind: String
        /// Largest width of a stepwise or continuous range.
        public var maximumWidth: Int?
        /// Largest height of a stepwise or continuous range.
        public var maximumHeight: Int?
        /// Frame intervals as "numerator/denominator" seconds, fastest first as the driver lists them.
        public var intervals: [String]
        /// The same intervals as frames per second.
        public var framesPerSecond: [Double]
    }

    /// One pixel format (`VIDIOC_ENUM_FMT`).
    public struct Format: Sendable, Hashable, Codable {
        /// Position in `VIDIOC_ENUM_FMT`'s list.
        public var index: Int
        /// The four-character code ("YUYV", "MJPG").
        public var fourCC: String
        public var description: String
        /// Whether frames are compressed (`V4L2_FMT_FLAG_COMPRESSED`).
        public var isCompressed: Bool
        /// Whether CaptureKit can deliver it (YUYV, MJPEG, NV12, GREY).
        public var isSupportedByCaptureKit: Bool
        /// Frame sizes with their intervals.
        public var sizes: [FrameSize]
    }

    /// The device node.
    public var path: String
    /// The camera's name (`v4l2_capability.card`).
    public var card: String
    /// The driver (`uvcvideo`).
    public var driver: String
    /// Where the camera is attached.
    public var busInfo: String
    /// Kernel version of the driver, "major.minor.patch".
    public var driverVersion: String
    /// Capability words of the node (`video-capture`, `streaming`, …).
    public var deviceCapabilities: [String]
    /// Every pixel format, with sizes and intervals.
    public var formats: [Format]
    /// The current format ("YUYV 640x480"), nil when the driver would not say.
    public var currentFormat: String?
    /// The current frame rate, nil when the driver would not say.
    public var currentFrameRate: Double?
    /// Every control, with range, default, value, menu and flags.
    public var controls: [CaptureDevice.ControlDescription]

    /// Reads the report from a node. The corresponding C functions are `ioctl(VIDIOC_QUERYCAP)`,
    /// `ioctl(VIDIOC_ENUM_FMT/ENUM_FRAMESIZES/ENUM_FRAMEINTERVALS)`, `ioctl(VIDIOC_G_FMT/G_PARM)`,
    /// `ioctl(VIDIOC_QUERY_EXT_CTRL/QUERYMENU/G_CTRL)`. Threading: thread-safe.
    ///
    /// - Throws: the open errors (`.permissionDenied`, `.deviceBusy`, `.deviceDisconnected`) and
    ///   `.deviceFailure`.
    public init(path: String, system: V4L2SystemCalls = .live) throws(CaptureError) {
        let d: V4L2Descriptor
        do { d = try V4L2Descriptor.open(path, system: system) } catch { throw error.captureError }
        defer { d.close() }
        do throws(V4L2Error) { try self.init(d) } catch { throw error.captureError }
    }

    init(_ d: V4L2Descriptor) throws(V4L2Error) {
        let cap = try d.queryCapabilities()
        path = d.path
        card = String(v4l2Field: cap.card)
        driver = String(v4l2Field: cap.driver)
        busInfo = String(v4l2Field: cap.bus_info)
        driverVersion = "\(cap.version >> 16).\((cap.version >> 8) & 0xff).\(cap.version & 0xff)"
        let caps = cap.capabilities & UInt32(V4L2_CAP_DEVICE_CAPS) != 0 ? cap.device_caps : cap.capabilities
        let words: [(UInt32, String)] = [
            (0x0000_0001, "video-capture"), (0x0000_1000, "video-capture-mplane"), (0x0000_0002, "video-output"),
            (0x0080_0000, "metadata-capture"), (0x0100_0000, "read-write"), (0x0400_0000, "streaming"),
            (0x0020_0000, "extended-pix-format"),
        ]
        deviceCapabilities = words.filter { caps & $0.0 != 0 }.map(\.1)
        var formats: [Format] = []
        if V4L2FrameSource.isVideoCapture(cap) {
            for (i, desc) in try d.enumerateFormats().enumerated() {
                let fourCC = FourCC.text(desc.pixelformat)
                var sizes: [FrameSize] = []
                for size in try d.enumerateFrameSizes(pixelFormat: desc.pixelformat) {
                    let discrete = size.type == V4L2_FRMSIZE_TYPE_DISCRETE.rawValue
                    let w = Int(discrete ? size.discrete.width : size.stepwise.min_width)
                    let h = Int(discrete ? size.discrete.height : size.stepwise.min_height)
                    let intervals =
                        (try? d.enumerateFrameIntervals(pixelFormat: desc.pixelformat, width: UInt32(w), height: UInt32(h))) ?? []
                    var texts: [String] = []
                    var rates: [Double] = []
                    for iv in intervals {
                        let f = iv.type == V4L2_FRMIVAL_TYPE_DISCRETE.rawValue ? iv.discrete : iv.stepwise.min
                        texts.append("\(f.numerator)/\(f.denominator)")
                        rates.append(f.numerator == 0 ? 0 : Double(f.denominator) / Double(f.numerator))
                    }
                    sizes.append(
                        FrameSize(
                            width: w, height: h,
                            kind: discrete ? "discrete" : size.type == V4L2_FRMSIZE_TYPE_STEPWISE.rawValue ? "stepwise" : "continuous",
                            maximumWidth: discrete ? nil : Int(size.stepwise.max_width),
                            maximumHeight: discrete ? nil : Int(size.stepwise.max_height), intervals: texts,
                            framesPerSecond: rates))
                }
                formats.append(
                    Format(
                        index: i, fourCC: fourCC, description: String(v4l2Field: desc.description),
                        isCompressed: desc.flags & UInt32(V4L2_FMT_FLAG_COMPRESSED) != 0,
                        isSupportedByCaptureKit: V4L2FrameSource.pixelFormat(forFourCC: fourCC) != nil, sizes: sizes))
            }
        }
        self.formats = formats
        if let pix = try? d.getFormat() {
            currentFormat = "\(FourCC.text(pix.pixelformat)) \(pix.width)x\(pix.height)"
        }
        if let f = try? d.getFrameInterval() { currentFrameRate = Double(f.denominator) / Double(f.numerator) }
        controls = (try? V4L2Controls.all(d)) ?? []
    }

    /// The report as text, laid out like `v4l2-ctl --all --list-formats-ext`.
    public var text: String {
        var out = "\(path): \(card)\n"
        out += "\tDriver name      : \(driver)\n\tCard type        : \(card)\n\tBus info         : \(busInfo)\n"
        out += "\tDriver version   : \(driverVersion)\n\tDevice Caps      : \(deviceCapabilities.joined(separator: ", "))\n"
        if let currentFormat { out += "\tFormat           : \(currentFormat)\n" }
        if let currentFrameRate { out += "\tFrames per second: \(Self.rate(currentFrameRate))\n" }
        if !formats.isEmpty { out += "\n\tFormats:\n" }
        for f in formats {
            out += "\t[\(f.index)]: '\(f.fourCC)' (\(f.description)\(f.isCompressed ? ", compressed" : ""))"
            out += f.isSupportedByCaptureKit ? "\n" : " (not used by cvcam)\n"
            for s in f.sizes {
                if s.kind == "discrete" {
                    out += "\t\tSize: Discrete \(s.width)x\(s.height)\n"
                } else {
                    out += "\t\tSize: \(s.kind.capitalized) \(s.width)x\(s.height) - \(s.maximumWidth ?? 0)x\(s.maximumHeight ?? 0)\n"
                }
                for (interval, fps) in zip(s.intervals, s.framesPerSecond) {
                    out += "\t\t\tInterval: Discrete \(interval) s (\(Self.rate(fps)) fps)\n"
                }
            }
        }
        if !controls.isEmpty { out += "\n\tControls:\n" }
        for c in controls {
            out += Self.lines(for: c).map { "\t" + $0 + "\n" }.joined()
        }
        return out
    }

    /// One control as v4l2-ctl lists it: `name id (type) : min=… max=… step=… default=… value=…
    /// flags=…`, then one indented line per menu entry. Compound controls (`rect`, …) have no
    /// single range or value: only their flags.
    public static func lines(for c: CaptureDevice.ControlDescription) -> [String] {
        var line = "\(c.v4l2Name) \(c.control) (\(c.type))"
        if c.type != "button" && c.type != "ctrl_class" && !c.flags.contains("has-payload") {
            line += " : min=\(c.minimum) max=\(c.maximum)"
            if !c.isMenu { line += " step=\(c.step)" }
            line += " default=\(c.defaultValue)"
            if let v = c.value { line += " value=\(v)" }
        }
        if !c.flags.isEmpty { line += " flags=\(c.flags.joined(separator: ", "))" }
        return [line] + c.menu.map { "\t\($0.index): \($0.name ?? $0.value.map(String.init) ?? "")" }
    }

    private static func rate(_ fps: Double) -> String {
        fps == fps.rounded() ? String(Int(fps)) : String(format: "%.3f", fps)
    }
}

extension CaptureDevice {
    /// The V4L2 report of this camera (see `V4L2DeviceReport`).
    /// - Throws: `.unsupported` for devices that are not V4L2 cameras, and the open errors.
    public func v4l2Report() throws(CaptureError) -> V4L2DeviceReport {
        let source = try v4l2Source(for: "V4L2 report")
        return try source.withControlDescriptor { d throws(CaptureError) in
            do throws(V4L2Error) { return try V4L2DeviceReport(d) } catch { throw error.captureError }
        }
    }
}
