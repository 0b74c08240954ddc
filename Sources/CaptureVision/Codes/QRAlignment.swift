import Foundation

/// A QR code's module map made exact by its alignment patterns.
///
/// `QRPerspective` fits the map through the three finders' outer squares. Those twelve points
/// lie at three corners of the code; the fourth corner is extrapolated, and when the far
/// finders' rings are 2 px their outlines are a pixel or two off, which at a steep tilt puts the
/// far corner modules away. From version 2 on a code carries alignment patterns (a dark module
/// in a light ring in a dark ring, 5×5 modules) at positions its version fixes, spread over the
/// whole code. Each is looked for near where the current map puts it, nearest the finders
/// first, and every one found joins the points the map is fitted to again, so that the next
/// prediction is closer: the map ends up pinned across the code, not only at three corners.
/// A wrong map only costs a read: the decoder's Reed–Solomon check vouches for what is read.
///
/// Threading: stateless; call from any thread.
enum QRAlignment {
    /// The centres of version `version`'s alignment patterns in module coordinates (origin at
    /// the code's top-left corner, a module's centre at its index plus a half), those under the
    /// finders left out; none below version 2 (ISO/IEC 18004, annex E: the first at row 6, the
    /// last 7 from the far side, evenly spaced between in even steps).
    static func centres(version: Int) -> [CGPoint] {
        guard version >= 2, version <= 40 else { return [] }
        let count = version / 7 + 2
        let size = 17 + 4 * version
        let step = version == 32 ? 26 : (version * 4 + count * 2 + 1) / (count * 2 - 2) * 2
        var positions = [6]
        for i in (0..<(count - 1)).reversed() { positions.append(size - 7 - i * step) }
        var out: [CGPoint] = []
        let last = positions.count - 1
        for (a, row) in positions.enumerated() {
            for (b, column) in positions.enumerated() {
                // The three corners with a finder.
                if (a == 0 && b == 0) || (a == 0 && b == last) || (a == last && b == 0) { continue }
                out.append(CGPoint(x: Double(column) + 0.5, y: Double(row) + 0.5))
            }
        }
        return out
    }

    /// At most this many patterns are looked for per map: enough to pin it across the code
    /// (the nearest first), and a bound on a version-40 code's 46.
    static let patternLimit = 12

    /// How far from its predicted place a pattern is looked for, in modules each way.
    static let reach = 4.0

    /// Of a pattern's 25 modules, at least this many must match for it to count.
    static let minimumMatch = 23

    /// How well the finders' outlines must fit a map (mean distance in modules,
    /// `QRPerspective.candidates`) for its patterns to be looked for: farther off, the nearest
    /// pattern lies beyond `reach`.
    static let outlineFitLimit = 1.0

    /// The longest side of the area thresholded for the search (pixels): a bound on the work.
    static let areaLimit = 1200.0

    /// `map` (module coordinates of a code of `n` modules a side to `gray`'s pixels) fitted
    /// again through the alignment patterns found near where it puts them and the points it was
    /// first fitted to (`from` module coordinates, `to` pixels); nil when no pattern was found.
    /// The code's area is thresholded by its local mean (a window of 8 modules), as the finder
    /// looks do.
    static func refined(
        _ map: Homography, modules n: Int, from: [CGPoint], to: [CGPoint], in gray: PixelBuffer
    ) throws(CaptureError) -> Homography? {
        let size = Double(n)
        let codeCorners = { (h: Homography) in
            [CGPoint(x: 0, y: 0), CGPoint(x: size, y: 0), CGPoint(x: size, y: size), CGPoint(x: 0, y: size)].map(h.apply)
        }
        let corners = codeCorners(map)
        var perimeter = 0.0
        for i in 0..<4 { perimeter += hypot(corners[(i + 1) % 4].x - corners[i].x, corners[(i + 1) % 4].y - corners[i].y) }
        let module = perimeter / (4 * size)
        let box = DeviceSpace.boundingBox(of: corners)
        guard module.isFinite, module >= 1, !box.isNull, max(box.width, box.height) <= areaLimit else { return nil }
        let area = box.insetBy(dx: -(reach + 3) * module, dy: -(reach + 3) * module)
            .intersection(CGRect(x: 0, y: 0, width: gray.width, height: gray.height))
        guard !area.isNull, area.width >= 32, area.height >= 32 else { return nil }
        let region = PixelRect(x: Int(area.minX), y: Int(area.minY), width: Int(area.width), height: Int(area.height))
        let crop = try CodeImaging.crop(gray, region)
        let block = Int32(min(127, max(15, Int(8 * module))) | 1)
        let binary = try CodeImaging.aboveMean(crop, try CodeImaging.localMean(crop, block: block), offset: 1)
        // The map into the crop's pixels and back: a translation after it.
        let ox = Double(region.x), oy = Double(region.y)
        let toCrop = Homography.scaling(1, 1, offsetX: -ox, offsetY: -oy), fromCrop = Homography.scaling(1, 1, offsetX: ox, offsetY: oy)
        let shifted = to.map(toCrop.apply)
        guard let r = withExtendedLifetime(binary, {
            refined(Homography(m: QRPerspective.multiply(toCrop.m, map.m)), modules: n, from: from, to: shifted, in: Thresholded(binary))
        })
        else { return nil }
        let pinned = Homography(m: QRPerspective.multiply(fromCrop.m, r.m))
        // The warp takes the code's corners from the map: they must stay finite and as compact.
        let moved = codeCorners(pinned)
        let movedBox = DeviceSpace.boundingBox(of: moved)
        guard moved.allSatisfy({ $0.x.isFinite && $0.y.isFinite }), !movedBox.isNull, max(movedBox.width, movedBox.height) <= areaLimit
        else { return nil }
        return pinned
    }

    /// `refined` on a thresholded image (dark 0) the map's pixels refer to.
    static func refined<Binary: FinderBinaryImage>(
        _ map: Homography, modules n: Int, from: [CGPoint], to: [CGPoint], in binary: Binary
    ) -> Homography? {
        let version = (n - 17) / 4
        // Nearest a finder first: the map is best there.
        let finders = [CGPoint(x: 3.5, y: 3.5), CGPoint(x: Double(n) - 3.5, y: 3.5), CGPoint(x: 3.5, y: Double(n) - 3.5)]
        let nearest = { (p: CGPoint) in finders.map { hypot($0.x - p.x, $0.y - p.y) }.min() ?? 0 }
        let wanted = centres(version: version).sorted { nearest($0) < nearest($1) }.prefix(patternLimit)
        var map = map, from = from, to = to, found = 0
        for centre in wanted {
            let p = map.apply(centre)
            let ex = map.apply(CGPoint(x: centre.x + 1, y: centre.y)), ey = map.apply(CGPoint(x: centre.x, y: centre.y + 1))
            let right = CGPoint(x: ex.x - p.x, y: ex.y - p.y), down = CGPoint(x: ey.x - p.x, y: ey.y - p.y)
            guard let seen = locate(binary, near: p, right: right, down: down) else { continue }
            // A found centre weighs as much as a finder's four outline corners.
            for _ in 0..<4 {
                from.append(centre)
                to.append(seen)
            }
            guard let next = QRPerspective.fit(from: from, to: to) else { return nil }
            map = next
            found += 1
        }
        return found > 0 ? map : nil
    }

    /// The centre of the alignment pattern nearest `predicted` (pixels) whose modules run along
    /// `right` and `down` (one module each), searched `reach` modules each way in steps of a
    /// third of a module (at least a pixel): the mean of the places where the most of its 25
    /// modules match, when at least `minimumMatch` do and those places lie within a module of
    /// each other; else nil.
    static func locate<Binary: FinderBinaryImage>(
        _ binary: Binary, near predicted: CGPoint, right: CGPoint, down: CGPoint
    ) -> CGPoint? {
        let module = (hypot(right.x, right.y) + hypot(down.x, down.y)) / 2
        // A map fitted to a wrong match can send a prediction anywhere: only places whose
        // search stays near the image are sampled (pixel coordinates become integers).
        let bound = Double(max(binary.width, binary.height))
        guard module >= 1, module <= bound, predicted.x.isFinite, predicted.y.isFinite,
            abs(predicted.x) <= 2 * bound, abs(predicted.y) <= 2 * bound
        else { return nil }
        let step = max(1, module / 3)
        let steps = Int((reach * module / step).rounded(.up))
        var best = 0
        var places: [CGPoint] = []
        for sy in -steps...steps {
            for sx in -steps...steps {
                let c = CGPoint(x: predicted.x + Double(sx) * step, y: predicted.y + Double(sy) * step)
                let s = score(binary, centre: c, right: right, down: down, atLeast: max(best, minimumMatch))
                if s > best {
                    best = s
                    places = [c]
                } else if s == best && s >= minimumMatch {
                    places.append(c)
                }
            }
        }
        guard best >= minimumMatch, !places.isEmpty else { return nil }
        let mean = CGPoint(x: places.reduce(0) { $0 + $1.x } / Double(places.count), y: places.reduce(0) { $0 + $1.y } / Double(places.count))
        guard places.allSatisfy({ hypot($0.x - mean.x, $0.y - mean.y) <= module }) else { return nil }
        return mean
    }

    /// How many of the 25 modules of an alignment pattern centred at `centre` match `binary`
    /// (the outer ring and the centre dark, the ring between light), one pixel sampled at each
    /// module's centre; outside the image is light. Stops early (returning less) once fewer than
    /// `atLeast` can still match.
    static func score<Binary: FinderBinaryImage>(
        _ binary: Binary, centre: CGPoint, right: CGPoint, down: CGPoint, atLeast: Int
    ) -> Int {
        var matched = 0, missed = 0
        for j in -2...2 {
            for i in -2...2 {
                let x = Int((centre.x + Double(i) * right.x + Double(j) * down.x).rounded())
                let y = Int((centre.y + Double(i) * right.y + Double(j) * down.y).rounded())
                let dark = x >= 0 && y >= 0 && x < binary.width && y < binary.height && binary.pixel(x, y) == 0
                let ring = max(abs(i), abs(j))
                if dark == (ring != 1) {
                    matched += 1
                } else {
                    missed += 1
                    if 25 - missed < atLeast { return matched }
                }
            }
        }
        return matched
    }
}
