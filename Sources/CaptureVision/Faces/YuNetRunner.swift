import CVBridge
import Foundation

// Running the networks: YuNet and Haar through the shim, the per-size networks and scratch
// buffers they reuse, and the upright second look.
extension FaceDetector {
    /// A face in pixels of the full image.
    struct Candidate {
        var box: CGRect
        var landmarks: [CGPoint]?
        var score: Double

        /// The candidate found in an image mirrored left-right, in the unmirrored image `width`
        /// pixels wide: x mirrored, and the person's eyes and mouth corners swapped back into
        /// YuNet's order (the person's right eye first).
        func mirrored(width: CGFloat) -> Candidate {
            var c = self
            c.box = CGRect(x: width - box.maxX, y: box.minY, width: box.width, height: box.height)
            if let m = landmarks, m.count == 5 {
                let flipped = m.map { CGPoint(x: width - $0.x, y: $0.y) }
                c.landmarks = [flipped[1], flipped[0], flipped[2], flipped[4], flipped[3]]
            }
            return c
        }
    }

    /// The YuNet network for `width` × `height` input (see `sizedYuNets`): created at that size
    /// on first use (`cvb_yunet_create`); `yuNet`, reshaped, once the limit is reached or when
    /// creating one fails; nil when no YuNet model loaded (Haar).
    func sizedYuNet(width: Int, height: Int) -> YuNetNetwork? {
        let key = width << 32 | height
        if let network = sizedYuNets[key] { return network }
        guard let yuNetModelPath, sizedYuNets.count < Self.sizedYuNetLimit else { return yuNet }
        var err = cvb_error()
        guard
            let network = YuNetNetwork(
                model: yuNetModelPath, width: width, height: height, scoreThreshold: configuration.candidateThreshold,
                nmsThreshold: configuration.nmsThreshold, topK: 5000, error: &err)
        else { return yuNet }
        sizedYuNets[key] = network
        return network
    }

    /// A scratch BGR buffer of `width` × `height` (see `scratch`); the cache is emptied when a
    /// ninth size is asked for (frame sizes changed).
    func scratchBuffer(width: Int, height: Int) throws(CaptureError) -> PixelBuffer {
        let key = width << 32 | height
        if let b = scratch[key] { return b }
        if scratch.count >= 8 { scratch.removeAll() }
        let b = try PixelBuffer(width: width, height: height, pixelFormat: .bgr)
        scratch[key] = b
        return b
    }

    /// Crops `region` (pixels), scales it by `scale`, runs the backend, maps results back to image pixels.
    func detectScaled(
        _ image: PixelBuffer, region: CGRect, scale: Double, network: YuNetNetwork? = nil
    ) throws(CaptureError) -> [Candidate] {
        // The shim refuses a crop reaching outside the image: whatever a search plan asks, only
        // the part inside is searched.
        let region = region.intersection(CGRect(x: 0, y: 0, width: image.width, height: image.height))
        guard !region.isNull, region.width >= 1, region.height >= 1 else { return [] }
        let w = max(1, Int((Double(region.width) * scale).rounded()))
        let h = max(1, Int((Double(region.height) * scale).rounded()))
        let scaled: PixelBuffer
        var err = cvb_error()
        if scale == 1, region.width == CGFloat(image.width), region.height == CGFloat(image.height) {
            scaled = image
        } else {
            scaled = try scratchBuffer(width: w, height: h)
            let interpolation = PixelBuffer.resizeInterpolation(
                width: Int(region.width), height: Int(region.height), toWidth: w, toHeight: h)
            let status = PixelBuffer.withBridgeImages(image, scaled) { src, dst in
                cvb_image_crop_resize(
                    &src, Int32(region.minX), Int32(region.minY), Int32(region.width), Int32(region.height), &dst,
                    interpolation, &err)
            }
            guard status == 0 else {
                throw CaptureError(.detectionFailed, "cannot prepare the image for face detection", bridge: err)
            }
        }
        let sx = Double(region.width) / Double(w)
        let sy = Double(region.height) / Double(h)
        func back(_ x: Double, _ y: Double) -> CGPoint {
            CGPoint(x: Double(region.minX) + x * sx, y: Double(region.minY) + y * sy)
        }
        if let yuNet = network ?? sizedYuNet(width: w, height: h) {
            return try yuNet.detect(scaled, capacity: 1024).compactMap { r in
                guard r[3] * sy >= configuration.minimumFaceSize else { return nil }
                let origin = back(r[0], r[1])
                let corner = back(r[0] + r[2], r[1] + r[3])
                let marks = (0..<5).map { back(r[4 + 2 * $0], r[5 + 2 * $0]) }
                return Candidate(
                    box: CGRect(x: origin.x, y: origin.y, width: corner.x - origin.x, height: corner.y - origin.y),
                    landmarks: marks, score: r[14])
            }
        }
        guard let cascade else { return [] }
        var count: Int32 = 0
        let capacity = 1024
        var rects = [Int32](repeating: 0, count: capacity * 4)
        var votes = [Int32](repeating: 0, count: capacity)
        let status = scaled.withBridgeImage { img in
            rects.withUnsafeMutableBufferPointer { r in
                votes.withUnsafeMutableBufferPointer { v in
                    cvb_cascade_detect(
                        cascade, &img, configuration.haarScaleFactor, Int32(configuration.haarMinimumNeighbours), 20, 20,
                        0, 0, r.baseAddress, v.baseAddress, Int32(capacity), &count, &err)
                }
            }
        }
        guard status == 0 else { throw CaptureError(.detectionFailed, "the Haar cascade failed", bridge: err) }
        return (0..<min(Int(count), capacity)).map { i in
            let origin = back(Double(rects[i * 4]), Double(rects[i * 4 + 1]))
            let corner = back(Double(rects[i * 4] + rects[i * 4 + 2]), Double(rects[i * 4 + 1] + rects[i * 4 + 3]))
            return Candidate(
                box: CGRect(x: origin.x, y: origin.y, width: corner.x - origin.x, height: corner.y - origin.y),
                landmarks: nil, score: min(1, Double(votes[i]) / 10))
        }
    }

    /// What a face looks like turned upright.
    struct UprightLook {
        var roll: Double
        var yaw: Double
        /// Upright landmarks mapped back to image pixels.
        var landmarks: [CGPoint]
        /// Whether the upright landmarks pass the geometry check against the upright box.
        var plausible: Bool
    }

    /// YuNet's landmarks overshoot on tilted faces (a face rolled 20° reads as 25–45°; past
    /// ~25° they can be wrong altogether). So the face is looked at again upright: a square of
    /// twice its box, turned by the roll estimate and scaled to 160 px (`cvb_image_warp_rotated`),
    /// is searched again and the residual roll of the face nearest the centre is added (one
    /// pass for roll refinement, up to two for a second look). On grace_hopper.jpg rotated by
    /// ±20…30° one pass brings the roll error from up to 23° down to 5°. Cost: one 160×160 YuNet
    /// run per pass.
    /// Nil when nothing is found upright.
    func uprightLook(_ image: PixelBuffer, _ c: Candidate, roll: Double, passes: Int) throws(CaptureError)
        -> UprightLook?
    {
        guard let uprightYuNet else { return nil }
        let side = 160
        let crop = try scratchBuffer(width: side, height: side)
        let scale = Double(side) / (2 * Double(max(c.box.width, c.box.height)))
        let centre = Double(side) / 2
        var estimate = roll
        var look: UprightLook?
        var err = cvb_error()
        for _ in 0..<passes {
            let warped = PixelBuffer.withBridgeImages(image, crop) { src, dst in
                cvb_image_warp_rotated(&src, Double(c.box.midX), Double(c.box.midY), estimate, scale, &dst, &err)
            }
            guard warped == 0 else {
                throw CaptureError(.detectionFailed, "cannot turn the face upright", bridge: err)
            }
            let faces = try uprightYuNet.detect(crop, capacity: 16)
            func distance(_ r: [Double]) -> Double { hypot(r[0] + r[2] / 2 - centre, r[1] + r[3] / 2 - centre) }
            guard let r = faces.min(by: { distance($0) < distance($1) }), distance(r) < Double(side) / 4 else { break }
            let box = CGRect(x: r[0], y: r[1], width: r[2], height: r[3])
            let marks = (0..<5).map { CGPoint(x: r[4 + 2 * $0], y: r[5 + 2 * $0]) }
            let residual = FaceGeometry.roll(marks)
            // Crop → image: undo the scale, then turn back by `estimate` (the inverse of the
            // rotation OpenCV applied, in y-down pixels).
            let a = estimate * .pi / 180
            let back = marks.map { p -> CGPoint in
                let x = (Double(p.x) - centre) / scale
                let y = (Double(p.y) - centre) / scale
                return CGPoint(
                    x: Double(c.box.midX) + x * cos(a) - y * sin(a), y: Double(c.box.midY) + x * sin(a) + y * cos(a))
            }
            estimate += residual
            look = UprightLook(
                roll: estimate, yaw: FaceGeometry.yaw(marks), landmarks: back,
                plausible: FaceGeometry.isPlausible(
                    box: box, landmarks: marks, maximumEyeDistanceRatio: configuration.maximumEyeDistanceRatio))
            // Done when nearly upright, or (second look) as soon as the upright face is plausible.
            if abs(residual) < 3 || (passes > 1 && look?.plausible == true) { break }
        }
        return look
    }

    func regionStats(_ image: PixelBuffer, _ rect: CGRect, sample: Int32, nearest: Bool) throws(CaptureError) -> (
        mean: Double, stddev: Double
    ) {
        var mean = 0.0
        var sd = 0.0
        var err = cvb_error()
        let status = image.withBridgeImage { img in
            cvb_image_region_stats(
                &img, Int32(rect.minX), Int32(rect.minY), Int32(rect.width), Int32(rect.height), sample, nearest ? 1 : 0,
                &mean, &sd, &err)
        }
        guard status == 0 else {
            throw CaptureError(.detectionFailed, "cannot measure the image", bridge: err)
        }
        return (mean, sd)
    }
}

/// One YuNet network loaded through the shim (`cvb_yunet_create`, `cvb_yunet_detect`,
/// `cvb_yunet_release`), and the choice of its input size for each image.
///
/// Threading: one thread at a time (`FaceDetector` holds its lock while running one).
final class YuNetNetwork {
    private let handle: OpaquePointer
    /// Whether the model is a 2023 one (run as a `cv::dnn` network), not 2022mar (`cv::FaceDetectorYN`).
    let is2023: Bool

    /// Loads `model` for a `width` × `height` input (`cvb_yunet_create`); nil, with `err`
    /// filled, when OpenCV cannot load it.
    init?(
        model: String, width: Int, height: Int, scoreThreshold: Double, nmsThreshold: Double, topK: Int,
        error err: inout cvb_error
    ) {
        guard
            let handle = cvb_yunet_create(
                model, Int32(width), Int32(height), Float(scoreThreshold), Float(nmsThreshold), Int32(topK), &err)
        else { return nil }
        self.handle = handle
        is2023 = cvb_yunet_is_2023(handle) == 1
    }

    deinit { cvb_yunet_release(handle) }

    /// The network input for a `width` × `height` image: a 2023 network sees the image padded
    /// to multiples of 32 (its coarsest stride), so any frame size runs without distortion;
    /// `cv::FaceDetectorYN` (2022mar) needs the image's own size, and is reshaped when it changes.
    static func inputSize(width: Int, height: Int, is2023: Bool) -> (width: Int, height: Int) {
        is2023 ? ((width + 31) / 32 * 32, (height + 31) / 32 * 32) : (width, height)
    }

    /// YuNet's rows for `image` (BGR), at most `capacity`: box x, y, w, h, five landmarks as
    /// (x, y), then the score, in pixels of `image` (`cvb_yunet_detect`).
    func detect(_ image: PixelBuffer, capacity: Int) throws(CaptureError) -> [[Double]] {
        let input = Self.inputSize(width: image.width, height: image.height, is2023: is2023)
        let width = Int(CVB_YUNET_ROW)
        var rows = [Float](repeating: 0, count: capacity * width)
        var count: Int32 = 0
        var err = cvb_error()
        let status = image.withBridgeImage { img in
            rows.withUnsafeMutableBufferPointer {
                cvb_yunet_detect(
                    handle, &img, Int32(input.width), Int32(input.height), $0.baseAddress, Int32(capacity), &count, &err)
            }
        }
        guard status == 0 else { throw CaptureError(.detectionFailed, "YuNet failed", bridge: err) }
        return (0..<min(Int(count), capacity)).map { i in rows[(i * width)..<((i + 1) * width)].map(Double.init) }
    }
}
