import CVBridge
import Foundation

/// cvcam's own Data Matrix locator, for symbols zxing-cpp 1.4's detector does not find at any
/// margin or scale: a symbol beside a stray dark speck, large symbols slightly turned or on a
/// bent surface; and its sampling grid is one perspective transform, which a symbol stretched
/// unevenly (modules of different widths along a row) does not follow.
///
/// The locator fits lines instead: the outline of each large dark component (the L joins most
/// of a symbol's dark modules) is its convex hull reduced to the quadrilateral of largest
/// area; each side is then measured again by scanning inward from outside for the first dark
/// pixel, and a line is fitted to those edge points by consensus (the light modules of a timing
/// side put half of them a module deeper). The two adjacent sides whose edge points almost all
/// lie on the line are the solid L; the other two are the timing sides. The symbol is warped
/// upright (a homography through the four corners), its four outer edges are traced there (a
/// symbol on a bent surface has sides that are not straight), the timing modules read along the
/// traced timing sides give the symbol's size and each column's and row's centre (so uneven
/// stretching is followed), and the modules sampled there are drawn as a clean image for
/// zxing-cpp's decoder, whose Reed–Solomon check vouches for what is read.
///
/// Pure functions over one image; thread-safe.
enum DataMatrixLocator {
    /// A symbol's modules as located and sampled.
    struct Symbol: Equatable {
        var rows: Int
        var columns: Int
        /// Row by row, true for a dark module; the L is the left column and the bottom row.
        var dark: [Bool]
        /// The symbol's outer corners in the image's pixel coordinates (OpenCV's: a pixel's
        /// centre is its integer position), clockwise from the symbol's own top-left: the far
        /// end of the L's vertical arm, the timing sides' corner, the far end of the L's
        /// horizontal arm, the L's corner.
        var corners: [CGPoint]
    }

    /// Data Matrix ECC 200 sizes (rows, columns): the square ones and the six rectangular ones.
    static let sizes: Set<Size> = {
        var s = Set([10, 12, 14, 16, 18, 20, 22, 24, 26, 32, 36, 40, 44, 48, 52, 64, 72, 80, 88, 96, 104, 120, 132, 144].map {
            Size(rows: $0, columns: $0)
        })
        for (r, c) in [(8, 18), (8, 32), (12, 26), (12, 36), (16, 36), (16, 48)] { s.insert(Size(rows: r, columns: c)) }
        return s
    }()

    struct Size: Hashable { var rows: Int, columns: Int }

    /// Components tried per image, largest first (the symbol's L component is nearly always
    /// among the largest; clutter can be larger).
    static let componentLimit = 3

    /// The symbols located in `gray` (at most `componentLimit` tried), each sampled; dark is
    /// at or below `threshold` when given, else at or below Otsu's level for the whole image.
    static func locate(_ gray: PixelBuffer, threshold: Double? = nil) throws(CaptureError) -> [Symbol] {
        guard gray.width >= 12, gray.height >= 12 else { return [] }
        let binary: PixelBuffer
        if let threshold {
            binary = try CodeImaging.thresholded(gray, kind: Int32(CVB_THRESHOLD_FIXED), value: threshold)
        } else {
            binary = try CodeImaging.thresholded(gray, kind: Int32(CVB_THRESHOLD_OTSU))
        }
        let image = Bits(binary)
        var out: [Symbol] = []
        for hull in withExtendedLifetime(binary, { largeComponentHulls(image) }) {
            guard let quad = largestQuadrilateral(hull),
                let sides = withExtendedLifetime(binary, { refinedSides(image, quad) }),
                let corners = uprightCorners(sides)
            else { continue }
            // Two components of one symbol (its L and a cluster beside it) locate it twice.
            let centre = centroid(corners)
            guard !out.contains(where: { distance(centroid($0.corners), centre) < distance(corners[0], corners[2]) / 4 }) else {
                continue
            }
            if let symbol = try sample(gray, corners: corners) { out.append(symbol) }
        }
        return out
    }

    /// A 0/255 image read as dark (below 128) or light; outside the image is light.
    struct Bits {
        private let image: Thresholded
        var width: Int { image.width }
        var height: Int { image.height }
        init(_ image: PixelBuffer) { self.image = Thresholded(image) }
        @inline(__always) func dark(_ x: Int, _ y: Int) -> Bool {
            x >= 0 && y >= 0 && x < width && y < height && image.pixel(x, y) < 128
        }
        /// The pixel containing `p` (a pixel spans [x, x + 1) here).
        @inline(__always) func dark(at p: CGPoint) -> Bool {
            dark(Int(Double(p.x).rounded(.down)), Int(Double(p.y).rounded(.down)))
        }
    }

    // MARK: - Outline

    /// The convex hulls (pixel-corner coordinates, clockwise on screen) of the largest dark
    /// 8-connected components whose bounding box is at least 10 pixels a side.
    static func largeComponentHulls(_ image: Bits) -> [[CGPoint]] {
        let w = image.width, h = image.height
        var label = [Int32](repeating: 0, count: w * h)
        var components: [(id: Int32, count: Int, minX: Int, minY: Int, maxX: Int, maxY: Int)] = []
        var allComponents: [(id: Int32, count: Int, minX: Int, minY: Int, maxX: Int, maxY: Int)] = []
        var stack: [Int] = []
        var next: Int32 = 0
        for start in 0..<(w * h) where label[start] == 0 && image.dark(start % w, start / w) {
            next += 1
            label[start] = next
            stack.append(start)
            var c = (id: next, count: 0, minX: w, minY: h, maxX: -1, maxY: -1)
            while let i = stack.popLast() {
                let x = i % w, y = i / w
                c.count += 1
                c.minX = min(c.minX, x)
                c.maxX = max(c.maxX, x)
                c.minY = min(c.minY, y)
                c.maxY = max(c.maxY, y)
                for dy in -1...1 {
                    for dx in -1...1 where dx != 0 || dy != 0 {
                        let nx = x + dx, ny = y + dy
                        guard nx >= 0, ny >= 0, nx < w, ny < h else { continue }
                        let j = ny * w + nx
                        if label[j] == 0 && image.dark(nx, ny) {
                            label[j] = next
                            stack.append(j)
                        }
                    }
                }
            }
            allComponents.append(c)
            if c.maxX - c.minX + 1 >= 10, c.maxY - c.minY + 1 >= 10, c.count >= 40 { components.append(c) }
        }
        components.sort { ($0.maxX - $0.minX + 1) * ($0.maxY - $0.minY + 1) > ($1.maxX - $1.minX + 1) * ($1.maxY - $1.minY + 1) }
        return components.prefix(componentLimit).map { c in
            // With the components reaching into its box (a margin of 3% and 2 px): timing modules
            // and data the L does not touch.
            let mx = 2 + (c.maxX - c.minX) * 3 / 100, my = 2 + (c.maxY - c.minY) * 3 / 100
            var box = (minX: c.minX - mx, minY: c.minY - my, maxX: c.maxX + mx, maxY: c.maxY + my)
            var ids: Set<Int32> = [c.id]
            let area = (c.maxX - c.minX + 1) * (c.maxY - c.minY + 1)
            for o in allComponents where o.id != c.id && (o.maxX - o.minX + 1) * (o.maxY - o.minY + 1) < area {
                if o.minX <= box.maxX && o.maxX >= box.minX && o.minY <= box.maxY && o.maxY >= box.minY { ids.insert(o.id) }
            }
            for o in allComponents where ids.contains(o.id) {
                box = (min(box.minX, o.minX), min(box.minY, o.minY), max(box.maxX, o.maxX), max(box.maxY, o.maxY))
            }
            // Membership by label, looked up for every pixel of the box.
            var member = [Bool](repeating: false, count: Int(next) + 1)
            for id in ids { member[Int(id)] = true }
            var points: [CGPoint] = []
            for y in max(0, box.minY)...min(h - 1, box.maxY) {
                var lo = -1, hi = -1
                for x in max(0, box.minX)...min(w - 1, box.maxX) where member[Int(label[y * w + x])] {
                    if lo < 0 { lo = x }
                    hi = x
                }
                guard lo >= 0 else { continue }
                points += [
                    CGPoint(x: lo, y: y), CGPoint(x: lo, y: y + 1), CGPoint(x: hi + 1, y: y), CGPoint(x: hi + 1, y: y + 1),
                ]
            }
            return convexHull(points)
        }
    }

    /// Andrew's monotone chain; clockwise on screen (y down), no collinear points.
    static func convexHull(_ points: [CGPoint]) -> [CGPoint] {
        let p = points.sorted { $0.x != $1.x ? $0.x < $1.x : $0.y < $1.y }
        guard p.count >= 3 else { return p }
        func cross(_ o: CGPoint, _ a: CGPoint, _ b: CGPoint) -> Double {
            Double((a.x - o.x) * (b.y - o.y) - (a.y - o.y) * (b.x - o.x))
        }
        var lower: [CGPoint] = [], upper: [CGPoint] = []
        for q in p {
            while lower.count >= 2 && cross(lower[lower.count - 2], lower[lower.count - 1], q) <= 0 { lower.removeLast() }
            lower.append(q)
        }
        for q in p.reversed() {
            while upper.count >= 2 && cross(upper[upper.count - 2], upper[upper.count - 1], q) <= 0 { upper.removeLast() }
            upper.append(q)
        }
        // Counter-clockwise in y-up terms is clockwise on screen.
        return Array(lower.dropLast() + upper.dropLast())
    }

    /// The four hull vertices spanning the largest area, in hull order (O(n²): for each
    /// diagonal the farthest vertex on each side moves monotonically).
    static func largestQuadrilateral(_ hull: [CGPoint]) -> [CGPoint]? {
        let n = hull.count
        guard n >= 4 else { return nil }
        func area(_ a: Int, _ b: Int, _ c: Int) -> Double {
            let p = hull[a % n], q = hull[b % n], r = hull[c % n]
            return abs(Double((q.x - p.x) * (r.y - p.y) - (q.y - p.y) * (r.x - p.x))) / 2
        }
        var best = 0.0
        var pick = [0, 1, 2, 3]
        for i in 0..<n {
            var k = i + 1, l = i + 3
            for j in (i + 2)..<(i + n - 1) {
                if k <= i { k = i + 1 }
                if k >= j { k = j - 1 }
                while k + 1 < j && area(i, k + 1, j) >= area(i, k, j) { k += 1 }
                if l <= j { l = j + 1 }
                while l + 1 < i + n && area(j, l + 1, i) >= area(j, l, i) { l += 1 }
                let a = area(i, k, j) + area(j, l, i)
                if a > best {
                    best = a
                    pick = [i, k, j, l]
                }
            }
        }
        guard best > 0 else { return nil }
        return pick.map { hull[$0 % n] }
    }

    // MARK: - Sides

    /// A direction or offset in pixels.
    struct Vector { var dx, dy: Double }

    /// A fitted side: a point on it, its unit direction, and the share of its edge samples on it
    /// (`support`: a line's; `bentSupport`: a gentle curve's, at least the line's).
    struct Side {
        var point: CGPoint
        var direction: Vector
        var support: Double
        var bentSupport: Double
    }

    /// The quadrilateral's sides measured again twice from the dark pixels (see the type's
    /// comment), nil when a side finds too few edge points or the result is not a convex
    /// quadrilateral of at least 8 pixels a side.
    static func refinedSides(_ image: Bits, _ quad: [CGPoint]) -> [Side]? {
        var corners = quad
        var sides: [Side] = []
        for pass in 0..<2 {
            sides = []
            for k in 0..<4 {
                guard let side = fitSide(image, from: corners[k], to: corners[(k + 1) % 4], reach: pass == 0 ? 0.12 : 0.06)
                else { return nil }
                sides.append(side)
            }
            var next: [CGPoint] = []
            for k in 0..<4 {
                guard let p = intersection(sides[(k + 3) % 4], sides[k]) else { return nil }
                next.append(p)
            }
            guard isConvexClockwise(next), (0..<4).allSatisfy({ distance(next[$0], next[($0 + 1) % 4]) >= 8 }),
                next.allSatisfy({
                    $0.x > -Double(image.width) / 4 && $0.y > -Double(image.height) / 4 && $0.x < 1.25 * Double(image.width)
                        && $0.y < 1.25 * Double(image.height)
                })
            else { return nil }
            corners = next
        }
        for k in 0..<4 { sides[k].point = corners[k] }
        return sides
    }

    /// Edge points along `a`→`b` (the polygon is clockwise on screen, so outside is to the
    /// left of the walk), each the first dark pixel met scanning inward from `reach` × the
    /// side's length outside, and the line most of them lie on.
    static func fitSide(_ image: Bits, from a: CGPoint, to b: CGPoint, reach: Double) -> Side? {
        let length = distance(a, b)
        guard length >= 8 else { return nil }
        let d = Vector(dx: (b.x - a.x) / length, dy: (b.y - a.y) / length)
        let outward = Vector(dx: d.dy, dy: -d.dx)
        let start = max(3, reach * length), step = 0.25
        let samples = min(200, max(24, Int(length)))
        var points: [CGPoint] = []
        for s in 0..<samples {
            let t = 0.08 + 0.84 * (Double(s) + 0.5) / Double(samples)
            let base = CGPoint(x: a.x + t * (b.x - a.x), y: a.y + t * (b.y - a.y))
            var depth = -start
            while depth <= start {
                let p = CGPoint(x: base.x - outward.dx * depth, y: base.y - outward.dy * depth)
                if image.dark(at: p) {
                    let e = depth - step / 2
                    points.append(CGPoint(x: base.x - outward.dx * e, y: base.y - outward.dy * e))
                    break
                }
                depth += step
            }
        }
        guard points.count >= samples / 3 else { return nil }
        // Consensus: the line through two edge points a third of the side apart that most
        // points lie within 0.9 px of, less three for each point beyond it outside (a line
        // slanting into a timing side has the side's dark modules outside; ties: the outer one).
        let tolerance = 0.9
        let pick = Swift.stride(from: 0, to: points.count, by: max(1, points.count / 40)).map { $0 }
        var best: (score: Int, offset: Double, p: CGPoint, nx: Double, ny: Double)? = nil
        for i in pick {
            for j in pick where j - i >= points.count / 3 {
                let p = points[i], q = points[j]
                let len = distance(p, q)
                guard len > 0 else { continue }
                // The unit normal, pointing outward.
                var nx = -Double(q.y - p.y) / len, ny = Double(q.x - p.x) / len
                if nx * outward.dx + ny * outward.dy < 0 { (nx, ny) = (-nx, -ny) }
                var inliers = 0, outside = 0
                for r in points {
                    let e = Double(r.x - p.x) * nx + Double(r.y - p.y) * ny
                    if abs(e) <= tolerance { inliers += 1 } else if e > tolerance { outside += 1 }
                }
                let score = inliers - 3 * outside
                let offset = Double(p.x - a.x) * outward.dx + Double(p.y - a.y) * outward.dy
                if best == nil || score > best!.score || (score == best!.score && offset > best!.offset) {
                    best = (score, offset, p, nx, ny)
                }
            }
        }
        guard let line = best else { return nil }
        let inliers = points.filter { abs(Double($0.x - line.p.x) * line.nx + Double($0.y - line.p.y) * line.ny) <= tolerance }
        guard inliers.count >= 6 else { return nil }
        // Total least squares through the inliers.
        let n = Double(inliers.count)
        let mx = inliers.reduce(0.0) { $0 + Double($1.x) } / n, my = inliers.reduce(0.0) { $0 + Double($1.y) } / n
        var sxx = 0.0, sxy = 0.0, syy = 0.0
        for p in inliers {
            let x = Double(p.x) - mx, y = Double(p.y) - my
            sxx += x * x
            sxy += x * y
            syy += y * y
        }
        let angle = 0.5 * atan2(2 * sxy, sxx - syy)
        var dir = Vector(dx: cos(angle), dy: sin(angle))
        if dir.dx * d.dx + dir.dy * d.dy < 0 { dir = Vector(dx: -dir.dx, dy: -dir.dy) }
        let support = Double(inliers.count) / Double(samples)
        let fitted = Side(point: CGPoint(x: mx, y: my), direction: dir, support: support, bentSupport: support)
        // A side printed on a bent surface bows a few pixels off any line: where a gentle curve
        // holds more of its edge points, the curve stands for it, and the chord through the
        // curve's ends is the line its corners are taken from. A timing side's points lie at
        // two depths a module apart, which no gentle curve follows either.
        guard support < solidSupport, let bent = bentSide(points, from: a, along: d, outward: outward, length: length)
        else { return fitted }
        let bentSupport = Double(bent.inliers) / Double(samples)
        guard bentSupport > support else { return fitted }
        return Side(point: bent.start, direction: bent.direction, support: support, bentSupport: bentSupport)
    }

    /// The farthest a bent side may bow from its chord, as a share of its length.
    static let bendLimit = 0.03

    /// The quadratic (depth outward against distance along the side from `a`) most of `points`
    /// lie within 0.9 px of, by consensus over triples taken from the side's three thirds, and
    /// bowing at most `bendLimit`: its inliers, its value at the side's start, and the unit
    /// direction of its chord across the side's `length`.
    static func bentSide(_ points: [CGPoint], from a: CGPoint, along d: Vector, outward: Vector, length: Double)
        -> (inliers: Int, start: CGPoint, direction: Vector)?
    {
        let local = points.map { p -> (u: Double, e: Double) in
            let x = Double(p.x - a.x), y = Double(p.y - a.y)
            return (x * d.dx + y * d.dy, x * outward.dx + y * outward.dy)
        }
        let n = local.count
        guard n >= 9 else { return nil }
        let tolerance = 0.9
        let step = max(1, n / 24)
        var best: (score: Int, inliers: Int, c: (Double, Double, Double))? = nil
        for i in Swift.stride(from: 0, to: n / 3, by: step) {
            for j in Swift.stride(from: n / 3, to: 2 * n / 3, by: step) {
                for k in Swift.stride(from: 2 * n / 3, to: n, by: step) {
                    guard let c = quadratic(through: local[i], local[j], local[k]) else { continue }
                    // The bow: the curve's largest distance from its chord across the side.
                    guard abs(c.2) * length * length / 4 <= bendLimit * length else { continue }
                    var inliers = 0, outside = 0
                    for q in local {
                        let r = q.e - (c.0 + c.1 * q.u + c.2 * q.u * q.u)
                        if abs(r) <= tolerance { inliers += 1 } else if r > tolerance { outside += 1 }
                    }
                    let score = inliers - 3 * outside
                    if best == nil || score > best!.score { best = (score, inliers, c) }
                }
            }
        }
        guard let fit = best else { return nil }
        let c = fit.c
        let e0 = c.0, e1 = c.0 + c.1 * length + c.2 * length * length
        let start = CGPoint(x: Double(a.x) + outward.dx * e0, y: Double(a.y) + outward.dy * e0)
        let dx = d.dx * length + outward.dx * (e1 - e0), dy = d.dy * length + outward.dy * (e1 - e0)
        let norm = hypot(dx, dy)
        guard norm > 0 else { return nil }
        return (fit.inliers, start, Vector(dx: dx / norm, dy: dy / norm))
    }

    /// The coefficients (c0, c1, c2) of e = c0 + c1·u + c2·u² through three points, nil when two
    /// share a u.
    static func quadratic(through p: (u: Double, e: Double), _ q: (u: Double, e: Double), _ r: (u: Double, e: Double))
        -> (Double, Double, Double)?
    {
        let d1 = q.u - p.u, d2 = r.u - q.u, d3 = r.u - p.u
        guard abs(d1) > 1e-9, abs(d2) > 1e-9, abs(d3) > 1e-9 else { return nil }
        let s1 = (q.e - p.e) / d1, s2 = (r.e - q.e) / d2
        let c2 = (s2 - s1) / d3
        let c1 = s1 - c2 * (p.u + q.u)
        let c0 = p.e - c1 * p.u - c2 * p.u * p.u
        return (c0, c1, c2)
    }

    static func intersection(_ s: Side, _ t: Side) -> CGPoint? {
        let den = Double(s.direction.dx * t.direction.dy - s.direction.dy * t.direction.dx)
        guard abs(den) > 0.2 else { return nil }  // sides meeting at under ~12°: no symbol corner
        let wx = Double(t.point.x - s.point.x), wy = Double(t.point.y - s.point.y)
        let u = (wx * Double(t.direction.dy) - wy * Double(t.direction.dx)) / den
        return CGPoint(x: Double(s.point.x) + u * Double(s.direction.dx), y: Double(s.point.y) + u * Double(s.direction.dy))
    }

    static func isConvexClockwise(_ q: [CGPoint]) -> Bool {
        (0..<4).allSatisfy { k in
            let a = q[k], b = q[(k + 1) % 4], c = q[(k + 2) % 4]
            return Double((b.x - a.x) * (c.y - b.y) - (b.y - a.y) * (c.x - b.x)) > 0
        }
    }

    static func centroid(_ q: [CGPoint]) -> CGPoint {
        CGPoint(x: q.reduce(0.0) { $0 + Double($1.x) } / Double(q.count), y: q.reduce(0.0) { $0 + Double($1.y) } / Double(q.count))
    }

    static func distance(_ a: CGPoint, _ b: CGPoint) -> Double { hypot(Double(a.x - b.x), Double(a.y - b.y)) }

    /// Edge support (`Side.bentSupport`: a line's, or a gentle curve's where one holds more) a
    /// solid side of the L has at least, and a timing side at most (half its outer modules
    /// are light; blur and noise move a few more).
    static let solidSupport = 0.8, timingSupport = (low: 0.2, high: 0.75)


    /// The corners (`sides[k].point` is the corner where side k starts) ordered as
    /// `Symbol.corners` says, in pixel-corner coordinates, when exactly one corner joins two
    /// solid sides and the other two sides look like timing sides.
    static func uprightCorners(_ sides: [Side]) -> [CGPoint]? {
        let solid = (0..<4).filter { k in sides[(k + 3) % 4].bentSupport >= solidSupport && sides[k].bentSupport >= solidSupport }
        guard solid.count == 1, let k = solid.first else { return nil }
        // A timing side: a line holds at most the upper share of its edge points (a gentle curve
        // may hold more of a straight one's), a line or curve at least the lower share.
        let timing = [sides[(k + 1) % 4], sides[(k + 2) % 4]]
        guard timing.allSatisfy({ $0.bentSupport >= timingSupport.low && $0.support <= timingSupport.high }) else { return nil }
        // Clockwise on screen, the side into the L's corner is the bottom arm, the one out of it the left arm.
        return [sides[(k + 1) % 4].point, sides[(k + 2) % 4].point, sides[(k + 3) % 4].point, sides[k].point]
    }

    // MARK: - Grid

    /// The symbol warped upright through `corners` (pixel-corner coordinates, `Symbol.corners`
    /// order; `cvb_perspective_transform`, `cvb_image_warp_perspective`) into a canvas with a
    /// margin, its modules sampled where they really are: a symbol on a bent surface has sides
    /// that bow or kink away from the straight lines through its corners (a module off at the
    /// middle of a large one), so each outer edge is traced row by row (column by column), the
    /// timing modules are read along the traced timing sides, and every module's centre is
    /// placed between the traced edges in proportion.
    static func sample(_ gray: PixelBuffer, corners: [CGPoint]) throws(CaptureError) -> Symbol? {
        let top = distance(corners[0], corners[1]), bottom = distance(corners[3], corners[2])
        let left = distance(corners[0], corners[3]), right = distance(corners[1], corners[2])
        let longest = max(top, bottom, left, right)
        // Several pixels per module for the runs, at most 480 pixels a side.
        let scale = max(1, min(4, 480 / longest))
        let w = Int(((top + bottom) / 2 * scale).rounded()), h = Int(((left + right) / 2 * scale).rounded())
        guard w >= 16, h >= 16 else { return nil }
        let margin = max(8, max(w, h) / 12)
        let cw = w + 2 * margin, ch = h + 2 * margin
        let x0 = Double(margin), y0 = Double(margin), x1 = Double(margin + w), y1 = Double(margin + h)
        let frame = corners.map { CGPoint(x: $0.x - 0.5, y: $0.y - 0.5) }
        let target = [
            CGPoint(x: x0 - 0.5, y: y0 - 0.5), CGPoint(x: x1 - 0.5, y: y0 - 0.5), CGPoint(x: x1 - 0.5, y: y1 - 0.5),
            CGPoint(x: x0 - 0.5, y: y1 - 0.5),
        ]
        let forward = try CodeImaging.homography(from: frame, to: target)
        let warped = try PixelBuffer(width: cw, height: ch, pixelFormat: .gray)
        try CodeImaging.warp(
            gray, into: warped, homography: forward, interpolation: Int32(CVB_INTER_LINEAR), border: Int32(CVB_BORDER_CONSTANT),
            borderValue: 255)
        let upright = try CodeImaging.thresholded(warped, kind: Int32(CVB_THRESHOLD_OTSU))
        return withExtendedLifetime(upright) { () -> Symbol? in
            let bits = Bits(upright)
            // The module size from the straight top timing row.
            guard
                let straight = timingRuns(
                    length: w, across: max(2, h / 6), dark: { along, across in bits.dark(margin + along, margin + across) })
            else { return nil }
            let m = Double(w) / Double(straight.count)
            // The timing sides' outer edges: the right one's x at each row, the top one's y at
            // each column, each the outermost dark pixel within 1.2 modules along (a light
            // timing module leaves the scan deeper in).
            func trace(_ count: Int, _ edgeAt: (Int) -> Double?) -> [Double] {
                let raw = (0..<count).map(edgeAt)
                let r = max(1, Int(1.2 * m))
                return (0..<count).map { i in
                    var best: Double? = nil
                    for j in max(0, i - r)...min(count - 1, i + r) { if let v = raw[j] { best = best.map { max($0, v) } ?? v } }
                    return best ?? 0
                }
            }
            let reach = Int(2 * m)
            let rightEdge = trace(ch) { y in
                for x in stride(from: min(cw - 1, margin + w + reach), through: margin + w - reach, by: -1) where bits.dark(x, y) {
                    return Double(x + 1)
                }
                return nil
            }
            // Stored negated where the outermost is the smallest coordinate.
            let topEdge = trace(cw) { x in
                for y in max(0, margin - reach)...(margin + reach) where bits.dark(x, y) { return -Double(y) }
                return nil
            }
            let leftEdge = trace(ch) { y in
                for x in max(0, margin - reach)...(margin + reach) where bits.dark(x, y) { return -Double(x) }
                return nil
            }
            let bottomEdge = trace(cw) { x in
                for y in stride(from: min(ch - 1, margin + h + reach), through: margin + h - reach, by: -1) where bits.dark(x, y) {
                    return Double(y + 1)
                }
                return nil
            }
            func xRight(_ y: Double) -> Double { rightEdge[min(ch - 1, max(0, Int(y)))] }
            func xLeft(_ y: Double) -> Double { -leftEdge[min(ch - 1, max(0, Int(y)))] }
            func yTop(_ x: Double) -> Double { -topEdge[min(cw - 1, max(0, Int(x)))] }
            func yBottom(_ x: Double) -> Double { bottomEdge[min(cw - 1, max(0, Int(x)))] }
            let topStart = xLeft(y0 + m / 2), topEnd = xRight(y0 + m / 2)
            let rightStart = yBottom(x1 - m / 2), rightEnd = yTop(x1 - m / 2)
            guard topEnd - topStart > 8, rightStart - rightEnd > 8 else { return nil }
            // Top timing row along its trace, left to right; right column along its trace, bottom to top.
            guard
                let columnRuns = timingRuns(
                    length: Int(topEnd - topStart), across: 3,
                    dark: { along, across in
                        let x = topStart + Double(along) + 0.5
                        return bits.dark(at: CGPoint(x: x, y: yTop(x) + m * (0.3 + 0.2 * Double(across))))
                    }),
                let rowRuns = timingRuns(
                    length: Int(rightStart - rightEnd), across: 3,
                    dark: { along, across in
                        let y = rightStart - Double(along) - 0.5
                        return bits.dark(at: CGPoint(x: xRight(y) - m * (0.3 + 0.2 * Double(across)), y: y))
                    }),
                let (columnCentres, rowCentres) = gridCentres(columns: columnRuns, rows: rowRuns)
            else { return nil }
            let u = columnCentres.map { $0 / (topEnd - topStart) }
            let v = rowCentres.reversed().map { 1 - $0 / (rightStart - rightEnd) }
            var grid = Grid(rows: v.count, columns: u.count, x: [], y: [])
            for vr in v {
                for uc in u {
                    // Between the traced left and right edges, and the traced top and bottom
                    // ones; twice, as each depends on the other.
                    var x = x0 + uc * Double(w), y = y0 + vr * Double(h)
                    for _ in 0..<2 {
                        x = xLeft(y) + uc * (xRight(y) - xLeft(y))
                        y = yTop(x) + vr * (yBottom(x) - yTop(x))
                    }
                    grid.x.append(x)
                    grid.y.append(y)
                }
            }
            grid = grid.followingInternalTiming(module: m) { bits.dark(at: $0) }
            let rows = grid.rows, columns = grid.columns
            let radius = max(0, Int(m / 5))
            var dark: [Bool] = []
            dark.reserveCapacity(rows * columns)
            for (x, y) in zip(grid.x, grid.y) {
                let cx = Int(x.rounded(.down)), cy = Int(y.rounded(.down))
                var n = 0, d = 0
                for yy in (cy - radius)...(cy + radius) {
                    for xx in (cx - radius)...(cx + radius) {
                        n += 1
                        if bits.dark(xx, yy) { d += 1 }
                    }
                }
                dark.append(2 * d > n)
            }
            let symbol = Symbol(rows: rows, columns: columns, dark: dark, corners: frame)
            return symbol.hasFinderPattern ? symbol : nil
        }
    }

    /// Where each module's centre lies in the upright warp, row by row from the top.
    struct Grid {
        var rows, columns: Int
        var x: [Double], y: [Double]

        /// The data regions a symbol of this size is divided into, down and across (ISO/IEC
        /// 16022's table: squares of 32–52 modules have 2 × 2, 64–104 4 × 4, 120–144 6 × 6;
        /// rectangles 32, 36 and 48 modules long 1 × 2).
        var regions: (down: Int, across: Int) {
            if rows == columns {
                switch rows {
                case ..<32: return (1, 1)
                case ..<64: return (2, 2)
                case ..<120: return (4, 4)
                default: return (6, 6)
                }
            }
            return (1, columns >= 32 ? 2 : 1)
        }

        /// The grid with its centres moved to where the timing rows and columns inside the
        /// symbol put them: each data region has its own finder, so a large symbol has rows and
        /// columns of alternating modules across its middle, and on a bent surface the middle
        /// strays from where the outer edges put it (a column off in a symbol of 48). Each such
        /// row is read along the grid's own row (three lines, a quarter module apart, as the
        /// outer timing sides are); where it shows exactly one run per module, the shift of
        /// each column there is measured, and shifts are interpolated between the measured rows,
        /// the outer timing row and the L's bottom arm (both unshifted); columns alike.
        func followingInternalTiming(module m: Double, dark: (CGPoint) -> Bool) -> Grid {
            let (down, across) = regions
            guard down > 1 || across > 1 else { return self }
            func at(_ r: Int, _ c: Int) -> Int { r * columns + c }
            /// Piecewise-linear through (key, value) pairs sorted by key, clamped at the ends.
            func interpolate(_ points: [(Double, Double)], _ t: Double) -> Double {
                guard let first = points.first, let last = points.last else { return 0 }
                if t <= first.0 { return first.1 }
                if t >= last.0 { return last.1 }
                let k = points.firstIndex { $0.0 >= t }!
                let (a, b) = (points[k - 1], points[k])
                return b.0 > a.0 ? a.1 + (t - a.0) / (b.0 - a.0) * (b.1 - a.1) : a.1
            }
            /// The run centres (along the key axis) of a timing line of `count` modules laid
            /// through `line` (key along it, value across, sorted by key; `point` makes a pixel
            /// position of the two), nil unless exactly `count` runs show.
            func centres(_ line: [(Double, Double)], count: Int, at point: (Double, Double) -> CGPoint) -> [Double]? {
                let start = line[0].0 - m / 2, length = Int(line[line.count - 1].0 - line[0].0 + m)
                guard length > 0,
                    let runs = DataMatrixLocator.timingRuns(
                        length: length, across: 3,
                        dark: { along, k in
                            let t = start + Double(along) + 0.5
                            return dark(point(t, interpolate(line, t) + (Double(k) - 1) * 0.25 * m))
                        }),
                    runs.count == count
                else { return nil }
                return runs.map { start + $0.centre }
            }
            // Shifts along x of every column, measured on internal timing rows.
            var rowShifts: [(row: Int, shift: [Double])] = [(0, Array(repeating: 0, count: columns))]
            for i in 1..<down {
                let r = i * rows / down
                guard let measured = centres((0..<columns).map { (x[at(r, $0)], y[at(r, $0)]) }, count: columns, at: { CGPoint(x: $0, y: $1) })
                else { continue }
                let shift = (0..<columns).map { measured[$0] - x[at(r, $0)] }
                if shift.allSatisfy({ abs($0) <= m }) { rowShifts.append((r, shift)) }
            }
            rowShifts.append((rows - 1, Array(repeating: 0, count: columns)))
            // Shifts along y of every row, measured on internal timing columns (read upward from
            // the L's bottom arm, as the right timing column is: keyed by -y).
            var columnShifts: [(column: Int, shift: [Double])] = [(0, Array(repeating: 0, count: rows))]
            for j in 1..<across {
                let c = j * columns / across - 1
                guard
                    let measured = centres(
                        (0..<rows).reversed().map { (-y[at($0, c)], x[at($0, c)]) }, count: rows, at: { CGPoint(x: $1, y: -$0) })
                else { continue }
                let shift = (0..<rows).map { -measured[rows - 1 - $0] - y[at($0, c)] }
                if shift.allSatisfy({ abs($0) <= m }) { columnShifts.append((c, shift)) }
            }
            columnShifts.append((columns - 1, Array(repeating: 0, count: rows)))
            guard rowShifts.count > 2 || columnShifts.count > 2 else { return self }
            var out = self
            for r in 0..<rows {
                for c in 0..<columns {
                    out.x[at(r, c)] += interpolate(rowShifts.map { (Double($0.row), $0.shift[c]) }, Double(r))
                    out.y[at(r, c)] += interpolate(columnShifts.map { (Double($0.column), $0.shift[r]) }, Double(c))
                }
            }
            return out
        }
    }

    /// A run of one colour along a timing side, in pixels from the side's start.
    struct Run: Equatable {
        var start, end: Double
        var centre: Double { (start + end) / 2 }
    }

    /// The runs of a timing side's modules along it (`length` pixels), read on each line
    /// 0..<`across` from the outer edge: runs shorter than a third of the line's median run are
    /// merged into their neighbours; of the lines that start dark with an even number of runs
    /// (at least 8), those with the most runs that two lines share are averaged. Nil when no
    /// two lines qualify.
    static func timingRuns(length: Int, across: Int, dark: (Int, Int) -> Bool) -> [Run]? {
        var byCount: [Int: [[Run]]] = [:]
        for line in 0..<across {
            var runs: [(dark: Bool, start: Int, end: Int)] = []
            for i in 0..<length {
                let v = dark(i, line)
                if let last = runs.last, last.dark == v { runs[runs.count - 1].end = i + 1 } else { runs.append((v, i, i + 1)) }
            }
            guard runs.count >= 8 else { continue }
            let median = runs.map { $0.end - $0.start }.sorted()[runs.count / 2]
            var merged = true
            while merged {
                merged = false
                if let i = runs.indices.min(by: { runs[$0].end - runs[$0].start < runs[$1].end - runs[$1].start }),
                    3 * (runs[i].end - runs[i].start) < median, runs.count > 1
                {
                    // Absorb the short run into its neighbours (which share a colour).
                    let lo = i > 0 ? i - 1 : i, hi = i < runs.count - 1 ? i + 1 : i
                    let start = runs[lo].start, end = runs[hi].end
                    let colour = i > 0 ? runs[i - 1].dark : runs[i + 1].dark
                    runs.replaceSubrange(lo...hi, with: [(colour, start, end)])
                    merged = true
                }
            }
            guard runs.count >= 8, runs.count % 2 == 0, runs[0].dark else { continue }
            byCount[runs.count, default: []].append(runs.map { Run(start: Double($0.start), end: Double($0.end)) })
        }
        // The timing side alternates every module: no line across the data has more runs, and
        // its own lines may be few (the side is one module of many lines), so the most runs
        // that two lines agree on.
        guard let lines = byCount.filter({ $0.value.count >= 2 }).max(by: { $0.key < $1.key })?.value else { return nil }
        let n = Double(lines.count)
        return (0..<lines[0].count).map { (i: Int) -> Run in
            let start: Double = lines.reduce(0.0) { $0 + $1[i].start }, end: Double = lines.reduce(0.0) { $0 + $1[i].end }
            return Run(start: start / n, end: end / n)
        }
    }

    /// The module centres along the top timing row (`columns`' runs) and up the right timing
    /// column (`rows`'), when their counts are a Data Matrix size. Where they are not, ink
    /// spread or a smudge may have closed a light module between two dark ones (or the reverse)
    /// on one side: that side is counted again against each size the other side's count allows
    /// (`regridded`), the size whose modules come nearest square first.
    static func gridCentres(columns: [Run], rows: [Run]) -> (columns: [Double], rows: [Double])? {
        if sizes.contains(Size(rows: rows.count, columns: columns.count)) {
            return (columns.map(\.centre), rows.map(\.centre))
        }
        let columnLength = (columns.last?.end ?? 0) - (columns.first?.start ?? 0)
        let rowLength = (rows.last?.end ?? 0) - (rows.first?.start ?? 0)
        guard columnLength > 0, rowLength > 0 else { return nil }
        var best: (columns: [Double], rows: [Double], misfit: Double)? = nil
        for size in sizes where size.rows == rows.count && size.columns > columns.count || size.columns == columns.count && size.rows > rows.count {
            // How far the two sides' module sizes differ (a ratio; 0 when equal).
            let misfit = abs(log((columnLength / Double(size.columns)) / (rowLength / Double(size.rows))))
            guard misfit <= squareModuleMisfit, misfit < best?.misfit ?? .infinity else { continue }
            if size.rows == rows.count, let c = regridded(columns, count: size.columns) {
                best = (c, rows.map(\.centre), misfit)
            } else if size.columns == columns.count, let r = regridded(rows, count: size.rows) {
                best = (columns.map(\.centre), r, misfit)
            }
        }
        return best.map { ($0.columns, $0.rows) }
    }

    /// How far apart (log of their ratio) the module sizes along the two timing sides may be
    /// when one side is counted again (`gridCentres`): half again (a symbol seen at an angle is
    /// foreshortened along one side; the warp keeps that).
    static let squareModuleMisfit = 0.41

    /// The centres of `count` modules along a timing side whose `runs` (alternating colours)
    /// number fewer: each run is as many modules as its length holds (rounded; the module the
    /// median of the four runs beside it, as a symbol stretched unevenly has modules of
    /// different lengths along a side), which must be odd (a lost module of the other colour
    /// joins two of this one) and add up to `count`; a run's modules share its length evenly.
    /// Nil when the runs do not fit so.
    static func regridded(_ runs: [Run], count: Int) -> [Double]? {
        guard runs.count >= 5, count > runs.count else { return nil }
        let lengths = runs.map { $0.end - $0.start }
        var centres: [Double] = []
        for (i, run) in runs.enumerated() {
            // The two runs on each side (three on one side at an end), this one left out.
            let lo = max(0, min(i - 2, runs.count - 5))
            let beside = (lo..<(lo + 5)).filter { $0 != i }.prefix(4).map { lengths[$0] }.sorted()
            let module = (beside[1] + beside[2]) / 2
            let k = Int(((run.end - run.start) / module).rounded())
            guard k >= 1, k % 2 == 1 else { return nil }
            let step = (run.end - run.start) / Double(k)
            centres += (0..<k).map { run.start + (Double($0) + 0.5) * step }
        }
        return centres.count == count ? centres : nil
    }
}

extension DataMatrixLocator.Symbol {
    /// The L solid and the timing sides alternating, allowing one module in twenty wrong (the
    /// code's own error correction does not cover its finder).
    var hasFinderPattern: Bool {
        // Each side module once per side it lies on (the corners twice).
        let sides = (0..<rows).flatMap { [($0, 0), ($0, columns - 1)] } + (0..<columns).flatMap { [(rows - 1, $0), (0, $0)] }
        let wrong = sides.filter { finderModule($0.0, $0.1) != dark[$0.0 * columns + $0.1] }.count
        return wrong * 20 <= sides.count
    }

    /// Whether the module at row `r`, column `c` of the L and the timing sides is dark, as the
    /// standard draws it; nil for a module inside them.
    func finderModule(_ r: Int, _ c: Int) -> Bool? {
        if c == 0 || r == rows - 1 { return true }
        if r == 0 { return c % 2 == 0 }
        if c == columns - 1 { return (rows - 1 - r) % 2 == 0 }
        return nil
    }

    /// The modules drawn `module` pixels each inside a `quiet`-module light margin; the L and
    /// the timing sides as the standard draws them (`hasFinderPattern` allowed a few wrong, and
    /// zxing-cpp's pure reader takes the module size from the top-left corner's run: ink that
    /// closed the first light timing module tripled it).
    func image(module: Int, quiet: Int) throws(CaptureError) -> PixelBuffer {
        let w = (columns + 2 * quiet) * module, h = (rows + 2 * quiet) * module
        let out = try PixelBuffer(width: w, height: h, pixelFormat: .gray)
        let dst = out.baseAddress.assumingMemoryBound(to: UInt8.self)
        for y in 0..<h { memset(dst + y * out.bytesPerRow, 255, w) }
        for r in 0..<rows {
            for c in 0..<columns where finderModule(r, c) ?? dark[r * columns + c] {
                for y in ((r + quiet) * module)..<((r + quiet + 1) * module) {
                    memset(dst + y * out.bytesPerRow + (c + quiet) * module, 0, module)
                }
            }
        }
        return out
    }
}

extension ScanRun {
    /// Pixels per module and quiet-zone modules of the clean image a located symbol is drawn as.
    static let locatedModule = 4, locatedQuiet = 2

    /// Data Matrix symbols in `gray` that `DataMatrixLocator` finds (`threshold`: see `locate`),
    /// read by zxing-cpp from a clean image of their modules (pure: one upright symbol), placed
    /// in the frame with `gray`'s top-left at `offset`. True when a new symbol was read.
    @discardableResult
    mutating func readLocatedDataMatrix(_ gray: PixelBuffer, offset: CGPoint = .zero, threshold: Double? = nil) throws(CaptureError) -> Bool {
        counts.localisations += 1
        var hints = ZXingHints.defaults([.dataMatrix])
        hints.isPure = true
        hints.tryRotate = false
        hints.tryDownscale = false
        var read = false
        for symbol in try DataMatrixLocator.locate(gray, threshold: threshold) {
            let m = Double(Self.locatedModule), q = Double(Self.locatedQuiet)
            let clean = try symbol.image(module: Self.locatedModule, quiet: Self.locatedQuiet)
            // The clean image's symbol outline onto the located corners (the corners only: the
            // grid inside may be stretched unevenly).
            let a = q * m - 0.5, bx = (q + Double(symbol.columns)) * m - 0.5, by = (q + Double(symbol.rows)) * m - 0.5
            let back = try CodeImaging.homography(
                from: [CGPoint(x: a, y: a), CGPoint(x: bx, y: a), CGPoint(x: bx, y: by), CGPoint(x: a, y: by)],
                to: symbol.corners.map { CGPoint(x: $0.x + offset.x, y: $0.y + offset.y) })
            if try zxingRead(clean, mapping: back, hints: hints) { read = true }
        }
        return read
    }
}
