import Foundation
import Synchronization

/// The geometry of a live preview (`AVCaptureVideoPreviewLayer`'s coordinate conversions),
/// without any window: where a camera frame lands in a view of a given size, so an app can
/// draw boxes over the preview and turn a tap into a focus or exposure point.
///
/// ## Spaces
/// - **Device space** (metadata `bounds`/`corners`, points of interest, `rectOfInterest`):
///   normalised 0…1, origin top-left, the frame as the sensor delivers it (unrotated).
/// - **Layer space**: points in `bounds`, origin top-left, y down.
///
/// ## The contract: device → layer, in this order
/// 1. **Rotate** clockwise by `videoRotationAngle`: 90° maps (x, y) → (1 − y, x);
///    180° → (1 − x, 1 − y); 270° → (y, 1 − x). For 90° and 270° the frame's width and
///    height swap.
/// 2. **Mirror** left-right, x → 1 − x, when `isVideoMirrored`.
/// 3. **Place** the rotated frame in `bounds` by `videoGravity`: `.resize` stretches it to
///    `bounds`; `.resizeAspect` scales it to fit and centres it (letterbox or pillarbox bars);
///    `.resizeAspectFill` scales it to cover `bounds` and centres it (the overhang is cropped).
///
/// Layer → device undoes the three steps in reverse order. Nothing is clamped: a layer point
/// in the bars of `.resizeAspect` maps outside 0…1, and a device point that `.resizeAspectFill`
/// cropped away maps outside `bounds`. Round trips are exact up to floating-point error.
///
/// ## Worked example (a test checks these numbers)
/// A 640×480 camera on a portrait kiosk: rotation 90°, mirrored, a 600×1200 view,
/// `.resizeAspectFill`. Device point (0.5, 0.25):
/// 1. rotate: (1 − 0.25, 0.5) = (0.75, 0.5); the frame is now 480×640;
/// 2. mirror: (1 − 0.75, 0.5) = (0.25, 0.5);
/// 3. fill: scale max(600/480, 1200/640) = 1.875, so the frame covers 900×1200 at x = −150
///    (150 points cropped on each side): (−150 + 0.25 × 900, 0.5 × 1200) = **(75, 600)**.
///
/// Back again, layer (75, 600) → device (0.5, 0.25). Device (0.25, 0.125) lands at
/// (−37.5, 300), left of the view: that part of the frame is cropped away.
///
/// ## Where the view's corners land
/// Call "displayed" the point after steps 1 and 2 (normalised in the rotated, mirrored frame).
/// With view aspect a = width/height and rotated-frame aspect f, the view's top-left corner
/// is displayed at: `.resize` (0, 0); `.resizeAspect` (−(a/f − 1)/2, 0) when a > f (pillarbox),
/// else (0, −(f/a − 1)/2) (letterbox); `.resizeAspectFill` (0, (1 − f/a)/2) when a > f, else
/// ((1 − a/f)/2, 0). Calling that (p, q), the top-right corner is displayed at (1 − p, q),
/// bottom-right (1 − p, 1 − q), bottom-left (p, 1 − q). A displayed
/// (0, 0) is device (0, 0) at 0°, (0, 1) at 90°, (1, 1) at 180°, (1, 0) at 270°; mirrored:
/// (1, 0), (0, 0), (0, 1), (1, 1).
///
/// ## Construction and threading
/// A class, as AVFoundation's layer is: create it empty and give it a session and a frame, as
/// an AVFoundation app does,
/// ```swift
/// let previewLayer = CaptureVideoPreviewLayer()
/// previewLayer.session = session
/// previewLayer.videoGravity = .resizeAspectFill
/// previewLayer.frame = CGRect(x: 0, y: 0, width: 390, height: 844)
/// ```
/// or with `init(session:)`. Following a session, every conversion reads, at that moment, the
/// session's video connection (rotation and mirroring: the connection of its
/// `CaptureVideoDataOutput`, whose frames an app draws, else of any output, else none) and its
/// input's active format (the frame size), so the geometry follows the session as it is
/// reconfigured. The throwing initialisers make a fixed geometry from plain values, or one that
/// follows a given connection, and check their arguments.
///
/// Until the layer has a size (`frame` or `bounds` with a positive, finite width and height)
/// and a frame to show (a session with an input), it has no geometry: conversions answer NaN
/// points, `.null` rects and nil metadata objects (`hasGeometry` tells).
///
/// Thread-safe: its settings are behind a lock; each conversion takes one consistent reading of
/// every setting, so one call never mixes two. Pure arithmetic in Swift; no C, OpenCV or V4L2
/// call is involved.
public final class CaptureVideoPreviewLayer: Sendable, CustomStringConvertible {
    /// How the frame is placed in the view (`AVLayerVideoGravity`).
    ///
    /// Value type; thread-safe.
    public enum VideoGravity: String, Sendable, CaseIterable, CustomStringConvertible {
        /// Stretch the frame to fill the view; the aspect ratio may change.
        case resize
        /// Fit the whole frame in the view, keeping its aspect ratio; bars fill the rest,
        /// equally on both sides. The default.
        case resizeAspect
        /// Cover the whole view, keeping the frame's aspect ratio; the overhang is cropped,
        /// equally on both sides.
        case resizeAspectFill

        public var description: String { rawValue }
    }

    /// The rotations a connection can apply, in degrees clockwise.
    public static let supportedVideoRotationAngles: [Double] = [0, 90, 180, 270]

    private enum Source: Sendable {
        /// Not yet given a session.
        case empty
        case fixed(quarterTurns: Int, mirrored: Bool, frame: CaptureDevice.Dimensions, inputID: CaptureInput.ID?)
        case live(CaptureConnection, CaptureDeviceInput)
        case session(CaptureSession)
    }
    private struct State: Sendable {
        var source: Source
        /// Where the layer sits in its superlayer (`frame.origin`); conversions ignore it.
        var position = CGPoint.zero
        var bounds: CGRect
        var videoGravity: VideoGravity
    }
    private let state: Mutex<State>

    /// An empty layer (`AVCaptureVideoPreviewLayer()`): no session, no size. Give it a `session`
    /// and a `frame` before converting anything.
    public init() {
        state = Mutex(State(source: .empty, bounds: .zero, videoGravity: .resizeAspect))
    }

    /// A layer that shows `session` (`AVCaptureVideoPreviewLayer(session:)`); give it a `frame`
    /// before converting anything.
    public convenience init(session: CaptureSession) {
        self.init()
        self.session = session
    }

    /// A fixed geometry from plain values (no session needed).
    ///
    /// - Parameters:
    ///   - bounds: the view, in layer coordinates (usually origin zero and the view's size;
    ///     a non-zero origin places the preview inside a larger screen).
    ///   - videoGravity: how the frame is placed.
    ///   - videoRotationAngle: clockwise rotation in degrees: 0, 90, 180 or 270.
    ///   - isVideoMirrored: whether the rotated frame is flipped left-right.
    ///   - frameDimensions: the active format's frame size in pixels, unrotated.
    ///   - inputID: the input whose metadata this layer converts (nil: any).
    /// - Throws: `CaptureError.Code.invalidPreviewGeometry` when `bounds` is not finite with a
    ///   positive width and height, the frame size is not positive, or the angle is not one of
    ///   `supportedVideoRotationAngles`.
    public init(
        bounds: CGRect, videoGravity: VideoGravity = .resizeAspect, videoRotationAngle: Double = 0,
        isVideoMirrored: Bool = false, frameDimensions: CaptureDevice.Dimensions, inputID: CaptureInput.ID? = nil
    ) throws(CaptureError) {
        guard let index = Self.supportedVideoRotationAngles.firstIndex(of: videoRotationAngle) else {
            throw CaptureError(
                .invalidPreviewGeometry,
                "unsupported rotation \(videoRotationAngle)°; use one of: 0, 90, 180, 270")
        }
        guard frameDimensions.width > 0, frameDimensions.height > 0 else {
            throw CaptureError(
                .invalidPreviewGeometry, "frame size \(frameDimensions) must have a positive width and height")
        }
        try Self.validate(bounds)
        state = Mutex(
            State(
                source: .fixed(quarterTurns: index, mirrored: isVideoMirrored, frame: frameDimensions, inputID: inputID),
                bounds: bounds, videoGravity: videoGravity))
    }

    /// A geometry that follows a connection: rotation and mirroring come from `connection`,
    /// the frame size from `input.device.activeFormat`, all read afresh on every conversion.
    ///
    /// - Parameters:
    ///   - connection: the connection whose frames the view shows (a video data output's).
    ///   - input: the input at the connection's input side.
    ///   - bounds: the view, in layer coordinates.
    ///   - videoGravity: how the frame is placed.
    /// - Throws: `CaptureError.Code.invalidPreviewGeometry` when `bounds` is not finite with a
    ///   positive width and height, or `input` is not the connection's input.
    public init(
        connection: CaptureConnection, input: CaptureDeviceInput, bounds: CGRect,
        videoGravity: VideoGravity = .resizeAspect
    ) throws(CaptureError) {
        guard connection.inputID == input.id else {
            throw CaptureError(
                .invalidPreviewGeometry,
                "the connection carries \(connection.inputID), not \(input.id) (\(input.device.localizedName)); pass the connection's own input")
        }
        try Self.validate(bounds)
        state = Mutex(State(source: .live(connection, input), bounds: bounds, videoGravity: videoGravity))
    }

    /// A layer fixed at this one's settings as they are now, read once: its rotation,
    /// mirroring, frame size, input, bounds and gravity stay as they were whatever the
    /// connection, session or this layer do next. Convert a frame's objects and rects with one
    /// snapshot so that they all agree: a layer following a connection reads it afresh at every
    /// call, so a rotation or mirroring changed between two calls would convert some objects one
    /// way and the rest the other. Without geometry (no usable size or no frame yet), a layer
    /// without geometry either.
    public func snapshot() -> CaptureVideoPreviewLayer {
        let s = state.withLock { $0 }
        let r = Self.reading(of: s)
        var copy = State(source: .empty, position: s.position, bounds: s.bounds, videoGravity: s.videoGravity)
        if let frame = r.frame, frame.width > 0, frame.height > 0 {
            copy.source = .fixed(quarterTurns: r.quarterTurns, mirrored: r.mirrored, frame: frame, inputID: r.inputID)
        }
        return CaptureVideoPreviewLayer(state: copy)
    }

    private init(state: State) {
        self.state = Mutex(state)
    }

    private static func validate(_ bounds: CGRect) throws(CaptureError) {
        guard isUsable(bounds) else {
            throw CaptureError(
                .invalidPreviewGeometry,
                "view bounds \(bounds) must be finite with a positive width and height")
        }
    }

    private static func isUsable(_ bounds: CGRect) -> Bool {
        let values = [bounds.origin.x, bounds.origin.y, bounds.size.width, bounds.size.height]
        return values.allSatisfy(\.isFinite) && bounds.size.width > 0 && bounds.size.height > 0
    }

    // MARK: Settings

    /// The session the layer shows (`session`). Setting it makes the layer follow that
    /// session's video connection and input; nil leaves the layer without a picture.
    public var session: CaptureSession? {
        get {
            if case .session(let session) = state.withLock({ $0.source }) { return session }
            return nil
        }
        set { state.withLock { $0.source = newValue.map { .session($0) } ?? .empty } }
    }

    /// The view, in layer coordinates (`bounds`): conversions map into and out of this rect.
    public var bounds: CGRect {
        get { state.withLock { $0.bounds } }
        set { state.withLock { $0.bounds = newValue } }
    }

    /// Where the layer sits in its superlayer and how large it is (`frame`). Setting it sets
    /// `bounds` to the same size at origin zero, as a CALayer does; the layer's position in its
    /// superlayer plays no part in the conversions, which are in the layer's own coordinates.
    public var frame: CGRect {
        get { state.withLock { CGRect(origin: $0.position, size: $0.bounds.size) } }
        set {
            state.withLock {
                $0.position = newValue.standardized.origin
                $0.bounds = CGRect(origin: .zero, size: newValue.standardized.size)
            }
        }
    }

    /// How the frame is placed in `bounds` (`videoGravity`). Defaults to `.resizeAspect`.
    public var videoGravity: VideoGravity {
        get { state.withLock { $0.videoGravity } }
        set { state.withLock { $0.videoGravity = newValue } }
    }

    /// The input whose metadata this layer converts; `transformedMetadataObject(for:)` returns
    /// nil for objects from other inputs. Nil: not tied to an input, objects from any input
    /// are converted. Following a session: its input.
    public var inputID: CaptureInput.ID? {
        switch state.withLock({ $0.source }) {
        case .empty: nil
        case .fixed(_, _, _, let inputID): inputID
        case .live(_, let input): input.id
        case .session(let session): session.inputs.first?.id
        }
    }

    /// The connection whose rotation and mirroring the layer follows (`connection`): the one it
    /// was made with, or the session's video connection (see "Construction and threading");
    /// change its `videoRotationAngle` and `isVideoMirrored` to turn the picture.
    public var connection: CaptureConnection? {
        switch state.withLock({ $0.source }) {
        case .empty, .fixed: nil
        case .live(let connection, _): connection
        case .session(let session): Self.videoConnection(of: session)
        }
    }

    /// Whether the layer has what conversions need: a usable size and a frame to show.
    public var hasGeometry: Bool { geometry != nil }

    /// Clockwise rotation in degrees, 0, 90, 180 or 270 (the connection's, when following one;
    /// 0 without geometry).
    public var videoRotationAngle: Double { Self.supportedVideoRotationAngles[reading.quarterTurns] }

    /// Whether the rotated frame is flipped left-right (the connection's, when following one).
    public var isVideoMirrored: Bool { reading.mirrored }

    /// The frame size in pixels, unrotated (the device's active format, when following a
    /// connection or session; 0×0 when there is none yet).
    public var frameDimensions: CaptureDevice.Dimensions {
        reading.frame ?? CaptureDevice.Dimensions(width: 0, height: 0)
    }

    /// The session's video connection: its video data output's, else any output's.
    private static func videoConnection(of session: CaptureSession) -> CaptureConnection? {
        let outputs = session.outputs
        let preferred = outputs.filter { $0 is CaptureVideoDataOutput } + outputs.filter { !($0 is CaptureVideoDataOutput) }
        for output in preferred {
            if let connection = output.connection(with: .video) { return connection }
        }
        return nil
    }

    /// Every setting, read once.
    private struct Reading {
        var bounds: CGRect
        var gravity: VideoGravity
        var quarterTurns: Int
        var mirrored: Bool
        var frame: CaptureDevice.Dimensions?
        var inputID: CaptureInput.ID? = nil
    }

    private var reading: Reading { Self.reading(of: state.withLock { $0 }) }

    private static func reading(of s: State) -> Reading {
        switch s.source {
        case .empty:
            return Reading(bounds: s.bounds, gravity: s.videoGravity, quarterTurns: 0, mirrored: false, frame: nil)
        case let .fixed(turns, mirrored, frame, inputID):
            return Reading(
                bounds: s.bounds, gravity: s.videoGravity, quarterTurns: turns, mirrored: mirrored, frame: frame, inputID: inputID)
        case let .live(connection, input):
            // `transform` reads rotation and mirroring under one lock; the angle is always
            // 0/90/180/270 (the connection traps on anything else).
            let (rotation, mirrored) = connection.transform
            return Reading(
                bounds: s.bounds, gravity: s.videoGravity, quarterTurns: (Int(rotation) / 90) & 3, mirrored: mirrored,
                frame: input.device.activeFormat.dimensions, inputID: input.id)
        case let .session(session):
            let input = session.inputs.first as? CaptureDeviceInput
            let (rotation, mirrored) = videoConnection(of: session)?.transform ?? (0, false)
            return Reading(
                bounds: s.bounds, gravity: s.videoGravity, quarterTurns: (Int(rotation) / 90) & 3, mirrored: mirrored,
                frame: input?.device.activeFormat.dimensions, inputID: input?.id)
        }
    }

    /// One consistent reading of every setting, or nil without a usable size or frame; each
    /// public call takes exactly one.
    private var geometry: PreviewGeometry? {
        let r = reading
        guard Self.isUsable(r.bounds), let frame = r.frame, frame.width > 0, frame.height > 0 else { return nil }
        return PreviewGeometry(bounds: r.bounds, gravity: r.gravity, quarterTurns: r.quarterTurns, mirrored: r.mirrored, frame: frame)
    }

    /// The settings as one line, e.g.
    /// `CaptureVideoPreviewLayer(bounds 0,0 600x1200, resizeAspectFill, 90°, mirrored, frame 640x480)`.
    public var description: String {
        func text(_ v: CGFloat) -> String {
            let d = Double(v)
            return d == d.rounded() && abs(d) < 1e15 ? String(Int(d)) : String(d)
        }
        let r = reading, b = r.bounds
        return "CaptureVideoPreviewLayer(bounds \(text(b.minX)),\(text(b.minY)) \(text(b.width))x\(text(b.height)), "
            + "\(r.gravity), \(90 * r.quarterTurns)°\(r.mirrored ? ", mirrored" : ""), frame \(r.frame.map(\.description) ?? "none"))"
    }

    // MARK: Conversions

    private static let noPoint = CGPoint(x: CGFloat.nan, y: CGFloat.nan)

    /// Converts a point in layer coordinates (a tap) to device space, for
    /// `focusPointOfInterest`/`exposurePointOfInterest`
    /// (`captureDevicePointConverted(fromLayerPoint:)`). Undoes placement, mirroring and
    /// rotation; a point in the letterbox bars maps outside 0…1. NaN without geometry.
    public func captureDevicePointConverted(fromLayerPoint point: CGPoint) -> CGPoint {
        geometry?.devicePoint(fromLayer: point) ?? Self.noPoint
    }

    /// Converts a point in device space to layer coordinates
    /// (`layerPointConverted(fromCaptureDevicePoint:)`): rotation, then mirroring, then
    /// placement. A point that `.resizeAspectFill` crops away maps outside `bounds`. NaN without
    /// geometry.
    public func layerPointConverted(fromCaptureDevicePoint point: CGPoint) -> CGPoint {
        geometry?.layerPoint(fromDevice: point) ?? Self.noPoint
    }

    /// Converts a rect in layer coordinates to device space, e.g. for a metadata output's
    /// `rectOfInterest` (`metadataOutputRectConverted(fromLayerRect:)`). The result is the
    /// bounding box of the rect's four converted corners; `.null` stays `.null`, and is the
    /// answer without geometry.
    public func metadataOutputRectConverted(fromLayerRect rect: CGRect) -> CGRect {
        geometry?.deviceRect(fromLayer: rect) ?? .null
    }

    /// Converts a rect in device space (a metadata object's `bounds`) to layer coordinates
    /// (`layerRectConverted(fromMetadataOutputRect:)`). The result is the bounding box of the
    /// rect's four converted corners; `.null` stays `.null`, and is the answer without geometry.
    public func layerRectConverted(fromMetadataOutputRect rect: CGRect) -> CGRect {
        geometry?.layerRect(fromDevice: rect) ?? .null
    }

    // MARK: Metadata objects

    /// A copy of `face` in layer coordinates, or nil when it came from another input than
    /// `inputID` or the layer has no geometry (`transformedMetadataObject(for:)`).
    ///
    /// - `bounds` converts as `layerRectConverted(fromMetadataOutputRect:)`.
    /// - `landmarks` convert point by point and keep their index order, so after mirroring the
    ///   person's right eye (index 0) is on the layer's right, where a mirror shows it.
    /// - `rollAngle` (when `hasRollAngle`) gains the rotation angle and then changes sign when
    ///   mirrored, normalised to (−180, 180]; `yawAngle` (when `hasYawAngle`) changes sign when
    ///   mirrored. The stretch of `.resize` does not change the angles.
    /// - Every other property is copied unchanged.
    public func transformedMetadataObject(for face: MetadataFaceObject) -> MetadataFaceObject? {
        guard accepts(face), let g = geometry else { return nil }
        var copy = face
        copy.bounds = g.layerRect(fromDevice: face.bounds)
        copy.landmarks = face.landmarks.map(g.layerPoint(fromDevice:))
        if face.hasRollAngle {
            var roll = face.rollAngle + Double(90 * g.quarterTurns)
            if g.mirrored { roll = -roll }
            roll = roll.truncatingRemainder(dividingBy: 360)
            if roll <= -180 { roll += 360 } else if roll > 180 { roll -= 360 }
            copy.rollAngle = roll
        }
        if face.hasYawAngle, g.mirrored { copy.yawAngle = -face.yawAngle }
        return copy
    }

    /// A copy of `code` in layer coordinates, or nil when it came from another input than
    /// `inputID` or the layer has no geometry (`transformedMetadataObject(for:)`).
    ///
    /// - `corners` convert point by point and keep their index order. Rotation keeps them
    ///   clockwise; mirroring makes the same index order run counter-clockwise in layer space
    ///   (index 0 is still the code's own top-left corner).
    /// - `bounds` converts as `layerRectConverted(fromMetadataOutputRect:)`, which equals the
    ///   bounding box of the converted corners.
    /// - Every other property is copied unchanged.
    public func transformedMetadataObject(
        for code: MetadataMachineReadableCodeObject
    ) -> MetadataMachineReadableCodeObject? {
        guard accepts(code), let g = geometry else { return nil }
        var copy = code
        copy.bounds = g.layerRect(fromDevice: code.bounds)
        copy.corners = code.corners.map(g.layerPoint(fromDevice:))
        return copy
    }

    /// A copy of any metadata object in layer coordinates, for mixed arrays from a metadata
    /// output; dispatches to the face and code overloads, which return the concrete type.
    /// Returns nil for an object from another input than `inputID`, without geometry, and for
    /// metadata types CaptureKit does not define (it cannot know which of their properties are
    /// coordinates).
    public func transformedMetadataObject(for object: any MetadataObject) -> (any MetadataObject)? {
        switch object {
        case let face as MetadataFaceObject: transformedMetadataObject(for: face)
        case let code as MetadataMachineReadableCodeObject: transformedMetadataObject(for: code)
        default: nil
        }
    }

    private func accepts(_ object: some MetadataObject) -> Bool {
        inputID.map { $0 == object.inputID } ?? true
    }
}

/// One reading of a preview's settings, and the only place the conversion math lives.
struct PreviewGeometry {
    var bounds: CGRect
    var gravity: CaptureVideoPreviewLayer.VideoGravity
    /// Clockwise quarter turns, 0…3.
    var quarterTurns: Int
    var mirrored: Bool
    var frame: CaptureDevice.Dimensions

    /// Where the whole rotated frame lands in layer coordinates (it may overhang `bounds`
    /// with `.resizeAspectFill`).
    var videoRect: CGRect {
        let fw = Double(quarterTurns.isMultiple(of: 2) ? frame.width : frame.height)
        let fh = Double(quarterTurns.isMultiple(of: 2) ? frame.height : frame.width)
        let bw = Double(bounds.width), bh = Double(bounds.height)
        let size: CGSize
        switch gravity {
        case .resize:
            return bounds
        case .resizeAspect, .resizeAspectFill:
            // The axis the gravity pins matches the view exactly; the other one scales.
            let widthBinds = (bw / fw < bh / fh) == (gravity == .resizeAspect)
            size = widthBinds ? CGSize(width: bw, height: fh * bw / fw) : CGSize(width: fw * bh / fh, height: bh)
        }
        return CGRect(
            x: Double(bounds.midX) - Double(size.width) / 2, y: Double(bounds.midY) - Double(size.height) / 2,
            width: size.width, height: size.height)
    }

    /// Rotates a normalised point clockwise by `turns` quarter turns.
    private static func rotate(_ p: CGPoint, turns: Int) -> CGPoint {
        switch turns & 3 {
        case 1: CGPoint(x: 1 - p.y, y: p.x)
        case 2: CGPoint(x: 1 - p.x, y: 1 - p.y)
        case 3: CGPoint(x: p.y, y: 1 - p.x)
        default: p
        }
    }

    func layerPoint(fromDevice p: CGPoint) -> CGPoint {
        var q = Self.rotate(p, turns: quarterTurns)
        if mirrored { q.x = 1 - q.x }
        let r = videoRect
        return CGPoint(x: r.minX + q.x * r.width, y: r.minY + q.y * r.height)
    }

    func devicePoint(fromLayer p: CGPoint) -> CGPoint {
        let r = videoRect
        var q = CGPoint(x: (p.x - r.minX) / r.width, y: (p.y - r.minY) / r.height)
        if mirrored { q.x = 1 - q.x }
        return Self.rotate(q, turns: 4 - quarterTurns)
    }

    func layerRect(fromDevice rect: CGRect) -> CGRect {
        Self.boundingBox(of: rect, mapping: layerPoint(fromDevice:))
    }

    func deviceRect(fromLayer rect: CGRect) -> CGRect {
        Self.boundingBox(of: rect, mapping: devicePoint(fromLayer:))
    }

    private static func boundingBox(of rect: CGRect, mapping: (CGPoint) -> CGPoint) -> CGRect {
        guard !rect.isNull else { return .null }
        let corners = [
            CGPoint(x: rect.minX, y: rect.minY), CGPoint(x: rect.maxX, y: rect.minY),
            CGPoint(x: rect.maxX, y: rect.maxY), CGPoint(x: rect.minX, y: rect.maxY),
        ].map(mapping)
        let xs = corners.map(\.x), ys = corners.map(\.y)
        let minX = xs.min()!, minY = ys.min()!
        return CGRect(x: minX, y: minY, width: xs.max()! - minX, height: ys.max()! - minY)
    }
}
