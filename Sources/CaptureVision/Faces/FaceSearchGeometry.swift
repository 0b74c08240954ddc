import Foundation

// Where a search looks, in pixels of the frame: the whole-frame plan (scale, large faces, tiles),
// the halves of a spread search, the squares around known faces, and merging what they find.
extension FaceDetector {
    /// The scale a whole-frame scan of `roi` runs at (see `minimumDetectionDimension`).
    func scanScale(_ roi: CGRect) -> Double {
        let long = max(roi.width, roi.height)
        var scale = 1.0
        if let minimum = configuration.minimumDetectionDimension, long < CGFloat(minimum) {
            scale = Double(minimum) / long
        }
        if let maximum = configuration.maximumDetectionDimension, long > CGFloat(maximum) {
            scale = Double(maximum) / long
        }
        return scale
    }

    /// A whole search of `roi`: the search at the detection scale (and tiles), fused with the
    /// same search of the mirrored image when `searchesMirroredImage` is set, plus the large
    /// faces of the reduced search (`largeFaceDimension`).
    func scan(_ image: PixelBuffer, _ roi: CGRect) throws(CaptureError) -> [Candidate] {
        let scale = scanScale(roi)
        var found = try primarySearch(image, roi, scale: scale)
        if configuration.searchesMirroredImage {
            let mirrored = try mirroredCopy(of: image)
            let width = CGFloat(image.width)
            let mirroredROI = CGRect(x: width - roi.maxX, y: roi.minY, width: roi.width, height: roi.height)
            let back = try primarySearch(mirrored, mirroredROI, scale: scale).map { $0.mirrored(width: width) }
            found = Self.fuse([found, back], minimumIoU: Self.fusionIoU)
        }
        let long = Double(max(roi.width, roi.height))
        if let side = configuration.largeFaceDimension, long * scale > 1.25 * Double(side) {
            found += try detectScaled(image, region: roi, scale: Double(side) / long).filter {
                Double($0.box.height) >= configuration.largeFaceMinimumSize && $0.score >= configuration.largeFaceScoreThreshold
            }
        }
        return found
    }

    /// The search at the detection scale, plus the full-resolution tiles (`tileSize`).
    private func primarySearch(_ image: PixelBuffer, _ roi: CGRect, scale: Double) throws(CaptureError) -> [Candidate] {
        var found = try detectScaled(image, region: roi, scale: scale)
        if let tile = configuration.tileSize, scale < 1, tile >= 64 {
            let step = max(32, Int(Double(tile) * (1 - min(0.5, max(0, configuration.tileOverlap)))))
            for y in Self.tileStarts(length: Int(roi.height), tile: tile, step: step) {
                for x in Self.tileStarts(length: Int(roi.width), tile: tile, step: step) {
                    let region = CGRect(
                        x: roi.minX + CGFloat(x), y: roi.minY + CGFloat(y), width: CGFloat(min(tile, Int(roi.width) - x)),
                        height: CGFloat(min(tile, Int(roi.height) - y)))
                    found += try detectScaled(image, region: region, scale: 1)
                }
            }
        }
        return found
    }

    /// How much a face found in the image and one found in its mirror image must overlap to be
    /// the same face (IoU).
    static let fusionIoU = 0.5

    /// Fuses the candidates of several searches of one image (weighted box fusion): best score
    /// first, each candidate joins the group whose best box it overlaps most (IoU ≥
    /// `minimumIoU`) and that has none from its search yet, else starts one. A group becomes one
    /// candidate: box and landmarks averaged, weighted by score; score the mean over all the
    /// searches, a search that missed the face counting 0, so a face needs the agreement of
    /// the searches to keep a high score.
    static func fuse(_ searches: [[Candidate]], minimumIoU: Double) -> [Candidate] {
        var all: [(search: Int, candidate: Candidate)] = []
        for (i, found) in searches.enumerated() { all += found.map { (i, $0) } }
        all.sort { $0.candidate.score > $1.candidate.score }
        var groups: [(lead: CGRect, members: [Int: Candidate])] = []
        for (search, c) in all {
            var chosen: Int?
            var bestIoU = minimumIoU
            for (g, group) in groups.enumerated() where group.members[search] == nil {
                let iou = group.lead.intersectionOverUnion(c.box)
                if iou >= bestIoU { (chosen, bestIoU) = (g, iou) }
            }
            if let chosen { groups[chosen].members[search] = c } else { groups.append((c.box, [search: c])) }
        }
        return groups.map { group in
            let members = Array(group.members.values)
            let weight = members.reduce(0) { $0 + $1.score }
            func mean(_ value: (Candidate) -> CGFloat) -> CGFloat {
                weight > 0 ? members.reduce(0) { $0 + value($1) * CGFloat($1.score) } / CGFloat(weight) : value(members[0])
            }
            let box = CGRect(
                x: mean { $0.box.minX }, y: mean { $0.box.minY }, width: mean { $0.box.width }, height: mean { $0.box.height })
            // Landmarks only when every member has them (YuNet always, Haar never).
            let marks = members.allSatisfy { $0.landmarks?.count == 5 }
                ? (0..<5).map { k in CGPoint(x: mean { $0.landmarks![k].x }, y: mean { $0.landmarks![k].y }) } : nil
            return Candidate(box: box, landmarks: marks, score: weight / Double(searches.count))
        }
    }

    /// A copy of `image` mirrored left-right (`cvb_image_rotate_mirror`), in a buffer kept for
    /// the next image of that size.
    func mirroredCopy(of image: PixelBuffer) throws(CaptureError) -> PixelBuffer {
        if mirrorScratch?.width != image.width || mirrorScratch?.height != image.height {
            mirrorScratch = try PixelBuffer(width: image.width, height: image.height, pixelFormat: .bgr)
        }
        guard let mirrored = mirrorScratch else { return image }
        try Imaging.rotateMirror(image, into: mirrored, degrees: 0, mirrored: true, "cannot mirror the image for face detection")
        return mirrored
    }

    /// Tile origins covering `length` with tiles of `tile` every `step`, the last one flush with the end.
    static func tileStarts(length: Int, tile: Int, step: Int) -> [Int] {
        guard length > tile else { return [0] }
        var starts = Array(stride(from: 0, to: length - tile, by: step))
        starts.append(length - tile)
        return starts
    }

    /// The upper or lower half of `roi` for a spread search at `scale`, in whole pixels.
    static func half(upper: Bool, of roi: CGRect, scale: Double) -> CGRect {
        let overlap = (scanPartOverlap / scale).rounded(.up)
        // Inside the region even when the overlap is taller than it (frames a few dozen pixels high).
        let split = min(max((Double(roi.midY) - overlap / 2).rounded(.down), Double(roi.minY)), Double(roi.maxY))
        return upper
            ? CGRect(x: roi.minX, y: roi.minY, width: roi.width, height: min(roi.height, CGFloat(split + overlap) - roi.minY))
            : CGRect(x: roi.minX, y: CGFloat(split), width: roi.width, height: roi.maxY - CGFloat(split))
    }

    /// Side of the square searched around a known face, in face sides.
    public static let nearSearchContext = 2.5
    /// The least side of that square, in frame pixels (small faces get a little more context).
    public static let nearSearchMinimumSide = 48.0
    /// The square's side in pixels when it is searched.
    public static let nearSearchInput = 128

    /// The square searched around `face` (pixels), in whole pixels inside `roi`, or nil when it
    /// does not fit.
    static func nearSearchSquare(around face: CGRect, regionOfInterest roi: CGRect) -> CGRect? {
        let side = max(nearSearchMinimumSide, nearSearchContext * Double(max(face.width, face.height))).rounded(.up)
        guard side <= Double(min(roi.width, roi.height)) else { return nil }
        let x = min(max((Double(face.midX) - side / 2).rounded(), Double(roi.minX)), Double(roi.maxX) - side)
        let y = min(max((Double(face.midY) - side / 2).rounded(), Double(roi.minY)), Double(roi.maxY) - side)
        return CGRect(x: x, y: y, width: side, height: side)
    }

    /// Whether `box` lies inside `square` (a search square or a half), allowing 2 % of its
    /// shorter side, except where its edge is the region's edge (a face cut by the frame is
    /// still a face).
    static func isWhole(_ box: CGRect, in square: CGRect, regionOfInterest roi: CGRect) -> Bool {
        let slack = 0.02 * min(square.width, square.height)
        return (box.minX >= square.minX - slack || square.minX <= roi.minX)
            && (box.minY >= square.minY - slack || square.minY <= roi.minY)
            && (box.maxX <= square.maxX + slack || square.maxX >= roi.maxX)
            && (box.maxY <= square.maxY + slack || square.maxY >= roi.maxY)
    }

    /// Greedy non-maximum suppression: best score first; a box is dropped when its IoU with a
    /// kept box exceeds `threshold`, or when most (60 %) of it lies inside a kept box (a
    /// partial face cut by a tile edge).
    static func suppressOverlaps(_ candidates: [Candidate], threshold: Double) -> [Candidate] {
        var kept: [Candidate] = []
        for c in candidates.sorted(by: { $0.score > $1.score }) {
            let overlaps = kept.contains { k in
                let inter = k.box.intersection(c.box)
                let shared = inter.isNull ? 0 : Double(inter.width * inter.height)
                let smaller = Double(min(k.box.width * k.box.height, c.box.width * c.box.height))
                return k.box.intersectionOverUnion(c.box) > threshold || (smaller > 0 && shared / smaller > 0.6)
            }
            if !overlaps { kept.append(c) }
        }
        return kept
    }
}

/// Landmark geometry in pixels (YuNet order: right eye, left eye, nose, right and left mouth corner).
enum FaceGeometry {
    /// Degrees, positive clockwise in the image: the eye line's angle.
    static func roll(_ m: [CGPoint]) -> Double {
        atan2(Double(m[1].y - m[0].y), Double(m[1].x - m[0].x)) * 180 / .pi
    }

    /// Degrees, positive towards the image's right: atan(r / 0.5), r = the nose tip's offset
    /// from the eye/mouth midline along the eye line, over the eye distance.
    static func yaw(_ m: [CGPoint]) -> Double {
        let (u, d) = eyeAxis(m)
        guard d > 0 else { return 0 }
        let eyes = mid(m[0], m[1])
        let mouth = mid(m[3], m[4])
        let centre = mid(eyes, mouth)
        let r = Double((m[2].x - centre.x) * u.x + (m[2].y - centre.y) * u.y) / d
        return atan(r / 0.5) * 180 / .pi
    }

    /// The checks described on `FaceDetector` (landmarks inside the box, vertical order, eye distance).
    static func isPlausible(box: CGRect, landmarks m: [CGPoint], maximumEyeDistanceRatio: Double) -> Bool {
        guard box.width > 0, box.height > 0, m.count == 5 else { return false }
        for p in m {
            let rx = Double((p.x - box.minX) / box.width)
            let ry = Double((p.y - box.minY) / box.height)
            if rx < -0.05 || rx > 1.05 || ry < 0.15 || ry > 0.95 { return false }
        }
        let (u, d) = eyeAxis(m)
        guard d > 0, d / Double(box.width) <= maximumEyeDistanceRatio else { return false }
        let down = CGPoint(x: -u.y, y: u.x)  // perpendicular to the eye line, pointing to the chin
        let eyes = mid(m[0], m[1])
        func depth(_ p: CGPoint) -> Double { Double((p.x - eyes.x) * down.x + (p.y - eyes.y) * down.y) / d }
        let nose = depth(m[2])
        let mouth = depth(mid(m[3], m[4]))
        return nose > 0.15 && mouth > nose
    }

    private static func eyeAxis(_ m: [CGPoint]) -> (CGPoint, Double) {
        let dx = Double(m[1].x - m[0].x)
        let dy = Double(m[1].y - m[0].y)
        let d = (dx * dx + dy * dy).squareRoot()
        return d > 0 ? (CGPoint(x: dx / d, y: dy / d), d) : (CGPoint(x: 1, y: 0), 0)
    }

    private static func mid(_ a: CGPoint, _ b: CGPoint) -> CGPoint { CGPoint(x: (a.x + b.x) / 2, y: (a.y + b.y) / 2) }
}

extension CGRect {
    /// Intersection over union of two rectangles (0 when either is empty).
    public func intersectionOverUnion(_ other: CGRect) -> Double {
        let inter = intersection(other)
        guard !inter.isNull else { return 0 }
        let i = Double(inter.width * inter.height)
        let u = Double(width * height + other.width * other.height) - i
        return u > 0 ? i / u : 0
    }

    /// How well `other` matches this rectangle as the same object seen again: their IoU when
    /// it is at least `minimumIoU`; otherwise, when the centres are closer than
    /// `maximumCentreDistance` × this rectangle's longer side, a value under `minimumIoU`
    /// falling with the distance; else 0 (not the same object). Shared by `FaceTracker`'s
    /// matching and the search near known faces.
    package func matchAffinity(_ other: CGRect, minimumIoU: Double, maximumCentreDistance: Double) -> Double {
        let iou = intersectionOverUnion(other)
        if iou >= minimumIoU { return iou }
        let side = max(width, height)
        guard side > 0 else { return 0 }
        let distance = hypot(midX - other.midX, midY - other.midY) / side
        guard distance < maximumCentreDistance else { return 0 }
        // Below any overlap match, falling with distance.
        return minimumIoU * (1 - distance / maximumCentreDistance) * 0.99
    }

    /// The rectangle rounded outwards to whole numbers.
    var roundedOutwards: CGRect {
        let x0 = minX.rounded(.down)
        let y0 = minY.rounded(.down)
        return CGRect(x: x0, y: y0, width: maxX.rounded(.up) - x0, height: maxY.rounded(.up) - y0)
    }
}
