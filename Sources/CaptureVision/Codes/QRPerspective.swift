import Foundation

/// A QR code seen at a steep angle, rectified from its three finder patterns' outlines.
///
/// `ScanRun.scanUpright` warps a finder triple's area with the affine map its three centres fix,
/// completing the parallelogram for the fourth corner. Tilted 30–50° away from the camera, a code
/// is a trapezoid: that corner lands modules away from the real one and the far rows are sampled
/// on the wrong grid. Each finder's outer square, measured (a least-squares line per side, as
/// `AztecCore` measures a bullseye's rings), gives four corners whose module coordinates are
/// known once the version is: twelve points over three corners of the code fix the perspective,
/// and the code is warped upright through the homography that fits them best.
///
/// Threading: stateless; call from any thread.
enum QRPerspective {
    /// A finder's outer square, corners in module offsets from its centre: (−3.5, −3.5),
    /// (3.5, −3.5), (3.5, 3.5), (−3.5, 3.5) in the code's upright frame.
    static let finderCorners = [CGPoint(x: -3.5, y: -3.5), CGPoint(x: 3.5, y: -3.5), CGPoint(x: 3.5, y: 3.5), CGPoint(x: -3.5, y: 3.5)]

    /// The outer square of the finder centred near `centre` in `binary` (dark 0), its corners in
    /// the order of `finderCorners` for a code whose top-right finder lies along `right` and
    /// bottom-left along `down` from the top-left one; nil when the outline does not read.
    static func outline<Binary: FinderBinaryImage>(
        _ binary: Binary, centre: CGPoint, module: Double, right: CGPoint, down: CGPoint
    ) -> [CGPoint]? {
        let cx = Int(centre.x.rounded()), cy = Int(centre.y.rounded())
        guard cx >= 0, cy >= 0, cx < binary.width, cy < binary.height else { return nil }
        // Centre square, light ring, dark ring: the third colour change is the outer edge.
        let points = AztecCore.ringEdge(binary, cx, cy, transition: 3, module: module)
        guard let quad = AztecCore.quadrilateral(points, centre: centre) else { return nil }
        // Each corner's quadrant in the code's own axes (solve p − centre = a·right + b·down).
        let det = right.x * down.y - right.y * down.x
        guard abs(det) > 1e-9 else { return nil }
        var ordered = [CGPoint?](repeating: nil, count: 4)
        for p in quad {
            let dx = p.x - centre.x, dy = p.y - centre.y
            let a = (dx * down.y - dy * down.x) / det, b = (right.x * dy - right.y * dx) / det
            let slot = b < 0 ? (a < 0 ? 0 : 1) : (a < 0 ? 3 : 2)
            guard ordered[slot] == nil else { return nil }
            ordered[slot] = p
        }
        return ordered.compactMap { $0 }
    }

    /// The least-squares homography taking `from` to `to` (four or more pairs): the direct linear
    /// transform with the last entry fixed at 1, on coordinates normalised to the unit scale.
    /// Nil when the points are degenerate.
    static func fit(from: [CGPoint], to: [CGPoint]) -> Homography? {
        guard from.count == to.count, from.count >= 4 else { return nil }
        func normaliser(_ p: [CGPoint]) -> (Double, Double, Double) {
            let n = Double(p.count)
            let mx = p.reduce(0) { $0 + $1.x } / n, my = p.reduce(0) { $0 + $1.y } / n
            let spread = p.reduce(0) { $0 + hypot($1.x - mx, $1.y - my) } / n
            return (mx, my, spread > 0 ? 1 / spread : 1)
        }
        let (fx, fy, fs) = normaliser(from), (tx, ty, ts) = normaliser(to)
        // Normal equations AᵀA h = Aᵀb of the 2n × 8 system.
        var ata = [Double](repeating: 0, count: 64), atb = [Double](repeating: 0, count: 8)
        for (p, q) in zip(from, to) {
            let x = (p.x - fx) * fs, y = (p.y - fy) * fs, u = (q.x - tx) * ts, v = (q.y - ty) * ts
            let rowU: [Double] = [x, y, 1, 0, 0, 0, -u * x, -u * y]
            let rowV: [Double] = [0, 0, 0, x, y, 1, -v * x, -v * y]
            for (row, rhs) in [(rowU, u), (rowV, v)] {
                for i in 0..<8 {
                    atb[i] += row[i] * rhs
                    for j in 0..<8 { ata[i * 8 + j] += row[i] * row[j] }
                }
            }
        }
        guard let h = solve(ata, atb) else { return nil }
        // Undo the normalisations: T⁻¹ · H · F.
        let hn = h + [1]
        let f: [Double] = [fs, 0, -fs * fx, 0, fs, -fs * fy, 0, 0, 1]
        let tInverse: [Double] = [1 / ts, 0, tx, 0, 1 / ts, ty, 0, 0, 1]
        let m = multiply(tInverse, multiply(hn, f))
        guard abs(m[8]) > 1e-12 else { return nil }
        return Homography(m: m.map { $0 / m[8] })
    }

    static func multiply(_ a: [Double], _ b: [Double]) -> [Double] {
        (0..<9).map { k -> Double in
            let r = k / 3, c = k % 3
            return a[r * 3] * b[c] + a[r * 3 + 1] * b[3 + c] + a[r * 3 + 2] * b[6 + c]
        }
    }

    /// The solution of the n × n system `a` x = `b` (Gaussian elimination, partial pivoting).
    static func solve(_ a: [Double], _ b: [Double]) -> [Double]? {
        let n = b.count
        var a = a, b = b
        for c in 0..<n {
            let pivot = (c..<n).max { abs(a[$0 * n + c]) < abs(a[$1 * n + c]) }!
            guard abs(a[pivot * n + c]) > 1e-12 else { return nil }
            if pivot != c {
                for j in 0..<n { a.swapAt(c * n + j, pivot * n + j) }
                b.swapAt(c, pivot)
            }
            for r in (c + 1)..<n {
                let f = a[r * n + c] / a[c * n + c]
                if f == 0 { continue }
                for j in c..<n { a[r * n + j] -= f * a[c * n + j] }
                b[r] -= f * b[c]
            }
        }
        var x = [Double](repeating: 0, count: n)
        for r in stride(from: n - 1, through: 0, by: -1) {
            var s = b[r]
            for j in (r + 1)..<n { s -= a[r * n + j] * x[j] }
            x[r] = s / a[r * n + r]
        }
        return x
    }

    /// Under this module (pixels, along a finder's row or column) a finder's rings are 1–2 px and
    /// its outline may not read; `measuredOutlines` stands in only for a triple with such a finder.
    static let smallFinderModule = 2.5

    /// Outer squares for `finders` (top-left, top-right, bottom-left) drawn from their centres,
    /// in the order of `finderCorners`: 3.5 modules each way along the code's rows (`right`) and
    /// columns (`down`), a module along each taken from the finder's row and column measures.
    /// Seen at a steep angle the near finders measure larger than the far ones: that is the
    /// perspective `candidates` then fits, where outlines of rings 1–2 px wide do not read.
    static func measuredOutlines(_ finders: [FinderEvidence.Finder], right: CGPoint, down: CGPoint) -> [[CGPoint]]? {
        let lr = hypot(right.x, right.y), ld = hypot(down.x, down.y)
        guard lr > 0, ld > 0 else { return nil }
        let r = CGPoint(x: right.x / lr, y: right.y / lr), d = CGPoint(x: down.x / ld, y: down.y / ld)
        return finders.map { f in
            let column = f.columnModule ?? f.module
            // The module along a direction from the row (x) and column (y) measures.
            let mr = hypot(r.x * f.module, r.y * column), md = hypot(d.x * f.module, d.y * column)
            return finderCorners.map { c in
                CGPoint(x: f.centre.x + c.x * mr * r.x + c.y * md * d.x, y: f.centre.y + c.x * mr * r.y + c.y * md * d.y)
            }
        }
    }

    /// The module maps (module coordinates, origin at the code's top-left corner, to pixels) that
    /// the three finders' outlines fit for each version near the one their spacing suggests, best
    /// fit first, with their mean distance from the points in modules; `outlines` in the order
    /// top-left, top-right, bottom-left.
    static func candidates(_ outlines: [[CGPoint]]) -> [(modules: Int, map: Homography, error: Double)] {
        guard outlines.count == 3, outlines.allSatisfy({ $0.count == 4 }) else { return [] }
        // The size, along each side: the centres' distance over the mean module of the two
        // finders at its ends (each finder's outline measured along that side), plus the 7 modules
        // of a finder. Seen at an angle the module shrinks along a side; the two ends' mean
        // follows it where one finder's own scale (the far one's, say) does not.
        let centre = { (o: [CGPoint]) in CGPoint(x: o.reduce(0) { $0 + $1.x } / 4, y: o.reduce(0) { $0 + $1.y } / 4) }
        let seen = outlines.map(centre)
        let distance = { (a: CGPoint, b: CGPoint) in hypot(b.x - a.x, b.y - a.y) }
        // A finder's module along the code's rows (its top and bottom sides over 7) and columns.
        let across = { (o: [CGPoint]) in (distance(o[0], o[1]) + distance(o[3], o[2])) / 14 }
        let down = { (o: [CGPoint]) in (distance(o[0], o[3]) + distance(o[1], o[2])) / 14 }
        let alongRight = distance(seen[0], seen[1]) / ((across(outlines[0]) + across(outlines[1])) / 2) + 7
        let alongDown = distance(seen[0], seen[2]) / ((down(outlines[0]) + down(outlines[2])) / 2) + 7
        guard alongRight.isFinite, alongDown.isFinite, min(alongRight, alongDown) > 15, max(alongRight, alongDown) < 190
        else { return [] }
        // Versions from one side's estimate to the other's, and at least two either side of
        // their mean; the fit's residual picks among them.
        let low = Int(((min(alongRight, alongDown) - 17) / 4).rounded())
        let high = Int(((max(alongRight, alongDown) - 17) / 4).rounded())
        let middle = (low + high) / 2
        let first = max(1, min(low, middle - 2) - 1), last = min(40, max(high, middle + 2) + 1)
        guard first <= last else { return [] }
        var out: [(Int, Homography, Double)] = []
        for v in first...last {
            let (from, to) = points(outlines, modules: 17 + 4 * v)
            guard let h = fit(from: from, to: to), let back = fit(from: to, to: from) else { continue }
            // The residual in modules: each point mapped back to the code's frame.
            let error = zip(to, from).reduce(0.0) { s, pair in
                let q = back.apply(pair.0)
                return s + hypot(q.x - pair.1.x, q.y - pair.1.y)
            } / Double(from.count)
            out.append((17 + 4 * v, h, error))
        }
        return out.sorted { $0.2 < $1.2 }
    }

    /// The outlines' corners (`to`, pixels; top-left, top-right, bottom-left finder) and where
    /// they lie in a code of `n` modules a side (`from`, module coordinates).
    static func points(_ outlines: [[CGPoint]], modules n: Int) -> (from: [CGPoint], to: [CGPoint]) {
        let size = Double(n)
        let centres = [CGPoint(x: 3.5, y: 3.5), CGPoint(x: size - 3.5, y: 3.5), CGPoint(x: 3.5, y: size - 3.5)]
        var from: [CGPoint] = [], to: [CGPoint] = []
        for (o, c) in zip(outlines, centres) {
            for (p, offset) in zip(o, finderCorners) {
                from.append(CGPoint(x: c.x + offset.x, y: c.y + offset.y))
                to.append(p)
            }
        }
        return (from, to)
    }
}

extension ScanRun {
    /// The triple `t` (in `gray`'s pixels, which `scale` maps to the frame's; `corner` the
    /// right-angle finder, `u` top-right and `v` bottom-left centres) rectified through its
    /// finders' outlines (`QRPerspective`) and read (`readThroughOutlines`). True when it read a
    /// new symbol.
    mutating func scanPerspective(
        _ t: [FinderEvidence.Finder], corner k: Int, u: CGPoint, v: CGPoint, in gray: PixelBuffer, scale: (Double, Double)
    ) throws(CaptureError) -> Bool {
        let o = t[k].centre
        let others = [t[(k + 1) % 3], t[(k + 2) % 3]]
        guard let tr = others.first(where: { $0.centre == u }), let bl = others.first(where: { $0.centre == v }) else {
            return false
        }
        let module = t.map(\.module).reduce(0, +) / 3
        // Threshold only the code's area (plus a finder's width): its local mean, as the finder looks do.
        let area = Self.codeArea(t).insetBy(dx: -4 * module, dy: -4 * module)
            .intersection(CGRect(x: 0, y: 0, width: gray.width, height: gray.height))
        guard !area.isNull, area.width >= 32, area.height >= 32 else { return false }
        let region = PixelRect(
            x: Int(area.minX), y: Int(area.minY), width: Int(area.width), height: Int(area.height))
        let crop = try CodeImaging.crop(gray, region)
        let binary = try CodeImaging.aboveMean(crop, try FinderEvidence.localMean(crop), offset: 1)
        let shift = CGPoint(x: Double(region.x), y: Double(region.y))
        let right = CGPoint(x: u.x - o.x, y: u.y - o.y), down = CGPoint(x: v.x - o.x, y: v.y - o.y)
        let outlines = withExtendedLifetime(binary) { () -> [[CGPoint]]? in
            let image = Thresholded(binary)
            var out: [[CGPoint]] = []
            for f in [t[k], tr, bl] {
                let c = CGPoint(x: f.centre.x - shift.x, y: f.centre.y - shift.y)
                guard let o = QRPerspective.outline(image, centre: c, module: f.module, right: right, down: down) else { return nil }
                out.append(o.map { CGPoint(x: $0.x + shift.x, y: $0.y + shift.y) })
            }
            return out
        }
        let lightCentred = t.contains(where: { !$0.dark })
        let measured = QRPerspective.measuredOutlines([t[k], tr, bl], right: right, down: down)
        if let outlines {
            if try readThroughOutlines(outlines, in: gray, scale: scale, lightCentred: lightCentred) { return true }
        } else if passes.measuredOutlines,
            t.contains(where: { min($0.module, $0.columnModule ?? $0.module) < QRPerspective.smallFinderModule }), let measured
        {
            // Finders too small for their outlines to read (a far one of 2 px a module or less):
            // squares drawn from their centres and their row and column measures, read once
            // nothing else in the frame read (`readMeasuredTriples`). Larger finders whose
            // outline does not read are seldom one code's three.
            measuredTriples.append((measured, gray, scale, lightCentred))
            return false
        }
        // Outlines that did not read, or of squeezed finders (rows of 2 px) that fit no map near
        // enough for the alignment patterns: the squares drawn from the finders' centres and
        // measures may (`readRefitTriples`).
        if passes.alignmentRefit, let measured {
            refitTriples.append((measured, gray, scale, lightCentred))
        }
        return false
    }

    /// The code whose three finders' outer squares are `outlines` (top-left, top-right,
    /// bottom-left; `gray`'s pixels, which `scale` maps to the frame's) warped upright through
    /// the homography they fit for the two best-fitting versions whose fit is within half a
    /// module, and read, plain and, when `lightCentred`, inverted. True when it read a new symbol.
    mutating func readThroughOutlines(
        _ outlines: [[CGPoint]], in gray: PixelBuffer, scale: (Double, Double), lightCentred: Bool
    ) throws(CaptureError) -> Bool {
        counts.localisations += 1
        let candidates = QRPerspective.candidates(outlines).prefix(2)
        for candidate in candidates where candidate.error < 0.5 {
            if try readUpright(gray, map: candidate.map, modules: candidate.modules, scale: scale, lightCentred: lightCentred) {
                return true
            }
        }
        // The maps again, pinned by the code's alignment patterns (`QRAlignment`); a map whose
        // outlines fit it to within a module is close enough to find the nearest ones.
        guard passes.alignmentRefit else { return false }
        for candidate in candidates where candidate.error < QRAlignment.outlineFitLimit && candidate.modules >= 25 {
            let (from, to) = QRPerspective.points(outlines, modules: candidate.modules)
            guard let refined = try QRAlignment.refined(candidate.map, modules: candidate.modules, from: from, to: to, in: gray)
            else { continue }
            counts.alignmentRefits += 1
            if try readUpright(gray, map: refined, modules: candidate.modules, scale: scale, lightCentred: lightCentred) {
                return true
            }
        }
        return false
    }

    /// The code of `n` modules a side that `map` (module coordinates to `gray`'s pixels, which
    /// `scale` maps to the frame's) places, warped upright with a 4-module margin and read,
    /// plain and, when `lightCentred`, inverted. True when it read a new symbol.
    mutating func readUpright(
        _ gray: PixelBuffer, map: Homography, modules: Int, scale: (Double, Double), lightCentred: Bool
    ) throws(CaptureError) -> Bool {
        let n = Double(modules), size = min(4.0, 900 / (n + 8))
        let side = Int(((n + 8) * size).rounded(.up))
        let target = { (p: CGPoint) in CGPoint(x: (p.x + 4) * size, y: (p.y + 4) * size) }
        let corners = [CGPoint(x: 0, y: 0), CGPoint(x: n, y: 0), CGPoint(x: n, y: n), CGPoint(x: 0, y: n)]
        let (upright, back) = try Self.warped(
            gray, from: corners.map(map.apply), to: corners.map(target), width: side, height: side,
            toFrame: { CGPoint(x: $0.x * scale.0, y: $0.y * scale.1) })
        if try attempt(upright, back, rectified: true) { return true }
        guard passes.inverted && lightCentred else { return false }
        return try attempt(try CodeImaging.inverted(upright), back, rectified: true)
    }

    /// The triples `scanPerspective` left in `measuredTriples`, read through the squares drawn
    /// from their finders' measures; at most two a frame. True when one read a new symbol.
    @discardableResult
    mutating func readMeasuredTriples() throws(CaptureError) -> Bool {
        let triples = measuredTriples
        measuredTriples = []
        return try readDeferred(triples)
    }

    /// The triples whose perspective read failed, left in `refitTriples`: read through the
    /// squares drawn from their finders' measures, pinned by their alignment patterns
    /// (`readThroughOutlines`); at most two a frame, once nothing else in the frame read.
    @discardableResult
    mutating func readRefitTriples() throws(CaptureError) -> Bool {
        let triples = refitTriples
        refitTriples = []
        return try readDeferred(triples)
    }

    /// The first two of `triples` read through their squares until one reads a new symbol.
    mutating func readDeferred(_ triples: [DeferredTriple]) throws(CaptureError) -> Bool {
        for m in triples.prefix(2) where try readThroughOutlines(m.outlines, in: m.source, scale: m.scale, lightCentred: m.lightCentred) {
            return true
        }
        return false
    }
}
