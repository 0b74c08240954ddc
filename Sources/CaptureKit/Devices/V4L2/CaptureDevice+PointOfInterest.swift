import CV4L2
import Foundation

/// Focus and exposure points of interest (`AVCaptureDevice.focusPointOfInterest` and
/// `exposurePointOfInterest`), on the UVC 1.5 region of interest.
///
/// Wraps `V4L2_CID_UVC_REGION_OF_INTEREST_RECT` (a `struct v4l2_rect` in the sensor's pixels)
/// and `V4L2_CID_UVC_REGION_OF_INTEREST_AUTO` (a bitmask of the automatic controls that follow
/// the region), through `ioctl(VIDIOC_G_EXT_CTRLS)` and `ioctl(VIDIOC_S_EXT_CTRLS)`, reading
/// `V4L2_CTRL_WHICH_MIN_VAL` and `V4L2_CTRL_WHICH_MAX_VAL` for the smallest region and the window
/// regions lie in. uvcvideo offers these controls for UVC 1.5 cameras that have the region of
/// interest; other cameras, files, image folders, network streams and synthetic cameras have no
/// points of interest.
///
/// As in AVFoundation, setting a point starts nothing and changes nothing on the camera: the
/// point is kept, and the next `setFocusMode(_:)` to an automatic focus mode (or
/// `setExposureMode(.continuousAutoExposure)`) writes a region around it together with the
/// matching auto bit, in one `VIDIOC_S_EXT_CTRLS`, before it starts the mode. Writing the region
/// earlier would move whatever already follows it (many cameras start with auto exposure on the
/// region) before the app asked for an operation.
///
/// The region is a fixed fraction of the window around the point (`regionFraction` of each side,
/// at least the camera's smallest region), moved inside the window at the edges. A camera has one
/// region: when the focus and exposure points give different regions, the operation applied last
/// owns it and the other's bit is cleared, so that operation meters or focuses on the whole frame
/// again rather than on a region meant for the other point.
///
/// Both points are settable properties as in AVFoundation (`device.focusPointOfInterest = p`);
/// `setFocusPointOfInterest(_:)` and `setExposurePointOfInterest(_:)` are their throwing forms.
///
/// Threading: reads are thread-safe; setters also require `lockForConfiguration()`.
extension CaptureDevice {
    /// The points set through this object; nil: never set (the getters answer the centre).
    struct PointsOfInterest: Sendable {
        var focus: CGPoint?
        var exposure: CGPoint?
    }

    /// The point both getters answer before a point is set: the centre of the frame.
    static let defaultPointOfInterest = CGPoint(x: 0.5, y: 0.5)

    /// The region's side as a fraction of the window's side.
    static let regionFraction = 0.2

    /// Whether the camera can focus on a point (`focusPointOfInterest`): it has the UVC region of
    /// interest and auto focus among the controls that can follow it. Threading: thread-safe.
    public var isFocusPointOfInterestSupported: Bool {
        supportsRegionOfInterest(bit: CV4L2_UVC_REGION_OF_INTEREST_AUTO_FOCUS)
    }

    /// Whether the camera can meter exposure on a point (`exposurePointOfInterest`): it has the
    /// UVC region of interest and auto exposure among the controls that can follow it.
    /// Threading: thread-safe.
    public var isExposurePointOfInterestSupported: Bool {
        supportsRegionOfInterest(bit: CV4L2_UVC_REGION_OF_INTEREST_AUTO_EXPOSURE)
    }

    /// The point auto focus looks at, in device space: (0, 0) top left, (1, 1) bottom right of
    /// the unrotated sensor frame; (0.5, 0.5) until one is set. Threading: thread-safe.
    ///
    /// Setting works as `setFocusPointOfInterest(_:)`, without `try`: as AVFoundation raises,
    /// setting without `lockForConfiguration()`, on a camera whose
    /// `isFocusPointOfInterestSupported` is false, or outside (0, 0)…(1, 1), stops the program.
    public var focusPointOfInterest: CGPoint {
        get { pointsOfInterest.withLock { $0.focus } ?? Self.defaultPointOfInterest }
        set { applySetting("focusPointOfInterest") { () throws(CaptureError) in try setFocusPointOfInterest(newValue) } }
    }

    /// The point auto exposure meters on, in device space; (0.5, 0.5) until one is set.
    /// Threading: thread-safe.
    ///
    /// Setting works as `setExposurePointOfInterest(_:)`, without `try`: as AVFoundation raises,
    /// setting without `lockForConfiguration()`, on a camera whose
    /// `isExposurePointOfInterestSupported` is false, or outside (0, 0)…(1, 1), stops the program.
    public var exposurePointOfInterest: CGPoint {
        get { pointsOfInterest.withLock { $0.exposure } ?? Self.defaultPointOfInterest }
        set {
            applySetting("exposurePointOfInterest") { () throws(CaptureError) in try setExposurePointOfInterest(newValue) }
        }
    }

    /// Sets the focus point of interest. Requires the configuration lock. The point takes effect
    /// with the next `setFocusMode(.autoFocus)` or `setFocusMode(.continuousAutoFocus)`.
    /// - Throws: `.deviceNotLockedForConfiguration`; `.unsupported` when
    ///   `isFocusPointOfInterestSupported` is false; `.valueOutOfRange` outside (0, 0)…(1, 1).
    public func setFocusPointOfInterest(_ point: CGPoint) throws(CaptureError) {
        try requireConfigurationLock()
        guard isFocusPointOfInterestSupported else { throw unsupportedPointOfInterest("focus", "auto focus") }
        try checkPointOfInterest(point, "focus")
        pointsOfInterest.withLock { $0.focus = point }
    }

    /// Sets the exposure point of interest. Requires the configuration lock. The point takes
    /// effect with the next `setExposureMode(.continuousAutoExposure)`.
    /// - Throws: `.deviceNotLockedForConfiguration`; `.unsupported` when
    ///   `isExposurePointOfInterestSupported` is false; `.valueOutOfRange` outside (0, 0)…(1, 1).
    public func setExposurePointOfInterest(_ point: CGPoint) throws(CaptureError) {
        try requireConfigurationLock()
        guard isExposurePointOfInterestSupported else { throw unsupportedPointOfInterest("exposure", "auto exposure") }
        try checkPointOfInterest(point, "exposure")
        pointsOfInterest.withLock { $0.exposure = point }
    }

    // MARK: Applying a point (setFocusMode / setExposureMode)

    /// Writes the region around the focus point, with the auto focus bit, when a point was set
    /// (and the camera still has the region: a point outlives a replug into another camera). Called by `setFocusMode(_:)` for the automatic modes, before it starts them.
    func applyFocusPointOfInterest() throws(CaptureError) {
        guard let point = pointsOfInterest.withLock({ $0.focus }), isFocusPointOfInterestSupported else { return }
        try applyRegionOfInterest(
            around: point, bit: CV4L2_UVC_REGION_OF_INTEREST_AUTO_FOCUS, other: CV4L2_UVC_REGION_OF_INTEREST_AUTO_EXPOSURE)
    }

    /// Writes the region around the exposure point, with the auto exposure bit, when a point was
    /// set. Called by `setExposureMode(.continuousAutoExposure)` before it starts the mode.
    func applyExposurePointOfInterest() throws(CaptureError) {
        guard let point = pointsOfInterest.withLock({ $0.exposure }), isExposurePointOfInterestSupported else { return }
        try applyRegionOfInterest(
            around: point, bit: CV4L2_UVC_REGION_OF_INTEREST_AUTO_EXPOSURE, other: CV4L2_UVC_REGION_OF_INTEREST_AUTO_FOCUS)
    }

    /// The window regions lie in and the smallest region, in the sensor's pixels.
    struct RegionLimits: Equatable, Sendable {
        var left: Int64
        var top: Int64
        var width: Int64
        var height: Int64
        var minWidth: Int64
        var minHeight: Int64
    }

    /// The region around `point` (device space) in `limits`: `regionFraction` of each side, at
    /// least the smallest region, at most the window, moved inside the window at the edges.
    static func region(around point: CGPoint, in limits: RegionLimits) -> V4L2ExtendedValue {
        func side(_ length: Int64, _ minimum: Int64) -> Int64 {
            min(length, max(minimum, Int64((Double(length) * regionFraction).rounded()), 1))
        }
        func origin(_ start: Int64, _ length: Int64, _ side: Int64, _ at: Double) -> Int64 {
            let wanted = Int64((Double(start) + at * Double(length) - Double(side) / 2).rounded())
            return min(max(wanted, start), start + length - side)
        }
        let width = side(limits.width, limits.minWidth)
        let height = side(limits.height, limits.minHeight)
        return .rect(
            left: Int32(clamping: origin(limits.left, limits.width, width, Double(point.x))),
            top: Int32(clamping: origin(limits.top, limits.height, height, Double(point.y))),
            width: UInt32(clamping: width), height: UInt32(clamping: height))
    }

    /// The new auto bitmask: `bit` on; `other` kept only if the region stays where it was (it
    /// then still marks the other operation's point); bits CaptureKit does not own untouched.
    static func regionAutoBits(current: UInt32, bit: UInt32, other: UInt32, regionMoved: Bool) -> UInt32 {
        (current & ~(bit | other)) | bit | (regionMoved ? 0 : current & other)
    }

    // MARK: Helpers

    private func supportsRegionOfInterest(bit: UInt32) -> Bool {
        guard source.capabilities != nil,
            let rect = (try? controlDescription(.regionOfInterestRect)) ?? nil, rect.type == "rect",
            let auto = (try? controlDescription(.regionOfInterestAuto)) ?? nil
        else { return false }
        return UInt64(bitPattern: auto.maximum) & UInt64(bit) != 0
    }

    private func unsupportedPointOfInterest(_ what: String, _ auto: String) -> CaptureError {
        CaptureError(
            .unsupported,
            "\(localizedName) does not support a \(what) point of interest: the camera lacks the UVC region-of-interest control with \(auto) (V4L2_CID_UVC_REGION_OF_INTEREST_RECT / _AUTO, which uvcvideo offers for UVC 1.5 cameras that have it); check isFocusPointOfInterestSupported / isExposurePointOfInterestSupported first")
    }

    private func checkPointOfInterest(_ point: CGPoint, _ what: String) throws(CaptureError) {
        guard point.x.isFinite, point.y.isFinite, (0...1).contains(point.x), (0...1).contains(point.y) else {
            throw CaptureError(
                .valueOutOfRange,
                "\(what) point of interest (\(point.x), \(point.y)) is outside the frame; device points run from (0, 0) top left to (1, 1) bottom right")
        }
    }

    /// Reads the window, the smallest region and the current region and bits, then writes the
    /// region around `point` and the new bits in one `VIDIOC_S_EXT_CTRLS`.
    private func applyRegionOfInterest(around point: CGPoint, bit: UInt32, other: UInt32) throws(CaptureError) {
        let rectID = Control.regionOfInterestRect.rawValue
        let autoID = Control.regionOfInterestAuto.rawValue
        try withControls("a region of interest") { d throws(CaptureError) in
            do throws(V4L2Error) {
                let limits = try Self.regionLimits(d)
                let current = try d.getExtendedControls([(rectID, .rect(left: 0, top: 0, width: 0, height: 0)), (autoID, .integer(0))])
                let bits: Int32 = if case .integer(let value) = current[1] { value } else { 0 }
                let region = Self.region(around: point, in: limits)
                let newBits = Self.regionAutoBits(
                    current: UInt32(bitPattern: bits), bit: bit, other: other, regionMoved: current[0] != region)
                _ = try d.setExtendedControls([(rectID, region), (autoID, .integer(Int32(bitPattern: newBits)))])
            } catch {
                throw error.captureError
            }
        }
    }

    /// The window (`V4L2_CTRL_WHICH_MAX_VAL`, which UVC defines as the current window) and the
    /// smallest region (`V4L2_CTRL_WHICH_MIN_VAL`). A driver without them (no
    /// `V4L2_CTRL_FLAG_HAS_WHICH_MIN_MAX`, or refusing the query): the current format's frame and
    /// a one-pixel minimum.
    static func regionLimits(_ d: V4L2Descriptor) throws(V4L2Error) -> RegionLimits {
        let rectID = Control.regionOfInterestRect.rawValue
        let query = [(id: rectID, kind: V4L2ExtendedValue.rect(left: 0, top: 0, width: 0, height: 0))]
        func read(_ which: UInt32) throws(V4L2Error) -> (left: Int32, top: Int32, width: UInt32, height: UInt32)? {
            do {
                guard case .rect(let left, let top, let width, let height) = try d.getExtendedControls(query, which: which)[0],
                    width > 0, height > 0
                else { return nil }
                return (left, top, width, height)
            } catch where [EINVAL, ENODATA, ENOTTY].contains(error.errno) {
                return nil
            }
        }
        let hasMinMax = try d.queryControl(id: rectID).flags & CV4L2_CTRL_FLAG_HAS_WHICH_MIN_MAX != 0
        if hasMinMax, let window = try read(CV4L2_CTRL_WHICH_MAX_VAL) {
            let smallest = try read(CV4L2_CTRL_WHICH_MIN_VAL)
            return RegionLimits(
                left: Int64(window.left), top: Int64(window.top), width: Int64(window.width), height: Int64(window.height),
                minWidth: Int64(smallest?.width ?? 1), minHeight: Int64(smallest?.height ?? 1))
        }
        let format = try d.getFormat()
        return RegionLimits(left: 0, top: 0, width: Int64(format.width), height: Int64(format.height), minWidth: 1, minHeight: 1)
    }
}
