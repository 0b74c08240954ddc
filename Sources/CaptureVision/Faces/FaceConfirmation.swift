import CVBridge
import Foundation

// The policy every search shares: the frame gate, suppression, score and contrast floors,
// landmark checks and roll refinement, and the one conversion of results to device space.
extension FaceDetector {
    /// The work shared by both searches: BGR conversion, the frame gate, `search` for
    /// candidates (nil passes through), non-maximum suppression and the per-face checks.
    func confirmedFaces(
        in image: PixelBuffer, regionOfInterest: CGRect,
        search: (PixelBuffer, CGRect) throws(CaptureError) -> [Candidate]?
    ) throws(CaptureError) -> [FaceDetection]? {
        let space = DeviceSpace(image)
        let roi = space.wholePixels(regionOfInterest)?.cgRect ?? .zero
        guard roi.width >= 8, roi.height >= 8 else { return [] }
        var source = image
        if image.pixelFormat != .bgr {
            source = try PixelBuffer(width: image.width, height: image.height, pixelFormat: .bgr)
            var err = cvb_error()
            guard PixelBuffer.withBridgeImages(image, source, { cvb_image_convert(&$0, &$1, &err) }) == 0 else {
                throw CaptureError(.conversionFailed, "face detection cannot read \(image.pixelFormat) frames", bridge: err)
            }
        }
        lock.lock()
        defer { lock.unlock() }
        if configuration.minimumFrameContrast > 0 {
            // Sampled, not averaged: a 256×256 pick of pixels keeps noise's deviation and costs
            // next to nothing beside the detector.
            let stats = try regionStats(source, roi, sample: 256, nearest: true)
            if stats.stddev < configuration.minimumFrameContrast { return [] }
        }
        guard var candidates = try search(source, roi) else { return nil }
        candidates = Self.suppressOverlaps(candidates, threshold: configuration.nmsThreshold)
        var faces: [FaceDetection] = []
        var refinementsLeft = configuration.maximumRollRefinements
        // Largest faces first, so the roll refinement budget goes to them; reported best first.
        for c in candidates.sorted(by: { $0.box.width * $0.box.height > $1.box.width * $1.box.height }) {
            // Haar's votes are already thresholded by `haarMinimumNeighbours`.
            guard backend == .haar || c.score >= configuration.scoreThreshold,
                roi.contains(CGPoint(x: c.box.midX, y: c.box.midY))
            else {
                continue
            }
            if let veto = configuration.catFaceVeto, try catFaceVotes(source, c.box) >= veto { continue }
            if configuration.minimumContrast > 0 {
                let contrast = try regionStats(source, c.box.roundedOutwards, sample: 16, nearest: false).stddev
                if contrast < configuration.minimumContrast { continue }
            }
            var marks = c.landmarks ?? []
            var roll = c.landmarks.map(FaceGeometry.roll)
            var yaw = c.landmarks.map(FaceGeometry.yaw)
            if let m = c.landmarks, let r = roll {
                let plausible =
                    !configuration.checksLandmarkGeometry
                    || FaceGeometry.isPlausible(
                        box: c.box, landmarks: m, maximumEyeDistanceRatio: configuration.maximumEyeDistanceRatio)
                if !plausible {
                    guard let recheck = configuration.uprightRecheckScore, c.score >= recheck,
                        let upright = try uprightLook(source, c, roll: r, passes: 2), upright.plausible
                    else { continue }
                    (marks, roll, yaw) = (upright.landmarks, upright.roll, upright.yaw)
                } else if abs(r) >= configuration.rollRefinementThreshold, refinementsLeft > 0 {
                    refinementsLeft -= 1
                    if let upright = try uprightLook(source, c, roll: r, passes: 1) {
                        (marks, roll, yaw) = (upright.landmarks, upright.roll, upright.yaw)
                    }
                }
            }
            var face = FaceDetection(
                bounds: space.deviceRect(fromPixels: c.box),
                landmarks: marks.map(space.devicePoint(fromPixel:)),
                confidence: min(1, max(0, c.score)),
                rollAngle: roll, yawAngle: yaw)
            face.pixelBox = FaceDetection.PixelBox(bounds: c.box, space: space)
            faces.append(face)
        }
        return faces.sorted { $0.confidence > $1.confidence }
    }

    /// The cat-face cascade's neighbour votes for a cat where `box` (pixels) is: a square of
    /// twice the box's longer side around its centre, scaled to 160 px (`cvb_image_warp_rotated`),
    /// searched by the cascade (`cvb_cascade_detect`, scale step 1.1, windows from 30 px); the
    /// most votes of a cat box overlapping the face's (IoU ≥ 0.25). 0 without the cascade.
    /// Call with `lock` held.
    func catFaceVotes(_ image: PixelBuffer, _ box: CGRect) throws(CaptureError) -> Int {
        guard let catCascade, box.width > 0, box.height > 0 else { return 0 }
        let side = 160
        let crop = try scratchBuffer(width: side, height: side)
        let scale = Double(side) / (2 * Double(max(box.width, box.height)))
        var err = cvb_error()
        let warped = PixelBuffer.withBridgeImages(image, crop) { src, dst in
            cvb_image_warp_rotated(&src, Double(box.midX), Double(box.midY), 0, scale, &dst, &err)
        }
        guard warped == 0 else { throw CaptureError(.detectionFailed, "cannot cut out the face for the cat check", bridge: err) }
        let capacity = 64
        var rects = [Int32](repeating: 0, count: capacity * 4)
        var votes = [Int32](repeating: 0, count: capacity)
        var count: Int32 = 0
        let status = crop.withBridgeImage { img in
            rects.withUnsafeMutableBufferPointer { r in
                votes.withUnsafeMutableBufferPointer { v in
                    cvb_cascade_detect(catCascade, &img, 1.1, 1, 30, 30, 0, 0, r.baseAddress, v.baseAddress, Int32(capacity), &count, &err)
                }
            }
        }
        guard status == 0 else { throw CaptureError(.detectionFailed, "the cat-face cascade failed", bridge: err) }
        let face = CGRect(
            x: Double(side) / 2 - Double(box.width) * scale / 2, y: Double(side) / 2 - Double(box.height) * scale / 2,
            width: Double(box.width) * scale, height: Double(box.height) * scale)
        var most = 0
        for i in 0..<min(Int(count), capacity) {
            let cat = CGRect(x: Int(rects[4 * i]), y: Int(rects[4 * i + 1]), width: Int(rects[4 * i + 2]), height: Int(rects[4 * i + 3]))
            if cat.intersectionOverUnion(face) >= 0.25 { most = max(most, Int(votes[i])) }
        }
        return most
    }

    /// `catFaceVotes` for a face `box` (pixels) of a BGR `image`, for measuring the check
    /// (bench-faces). Thread-safe.
    package func catFaceVotes(in image: PixelBuffer, box: CGRect) throws(CaptureError) -> Int {
        lock.lock()
        defer { lock.unlock() }
        return try catFaceVotes(image, box)
    }
}
