import Foundation

/// Signs of the 2-D symbologies without QR finder patterns, noted by `FinderEvidence`'s row scan
/// on its way (the run lengths it computes for QR finders are most of what these tests need):
///
/// - Aztec: the bullseye, seven runs of one module each centred on a dark one (the concentric
///   squares seen across their centre), then the second dark ring on both sides (at least half
///   a module: the mode message's modules beyond it may be dark too, or the image may end
///   there), confirmed on the vertical and both diagonals through that centre as QR finders
///   are. A square ring crossed along any line through its centre gives runs of equal length on
///   both sides, so rotation keeps the pattern.
/// - PDF417: the start pattern (bars and spaces 8:1:1:1:1:1:1:3 modules) or the stop pattern
///   (7:1:1:3:1:1:1:2:1), either way round, crossed by three scanned rows at about the same
///   place (`addPDF417Hit`): every row of the symbol repeats the two patterns. Turned by
///   about 90° the patterns lie along the rows, and no row crosses them; the gate's look walks
///   the columns down a long dark run instead (`walkStanding`).
/// - Data Matrix: a timing edge, ten or more alternating runs of one module each (its top edge
///   alternates dark and light; so does the right one, which a rotation by a multiple of 90°
///   lays along the row), with the quiet zone running along one side of it, 1.5 modules away,
///   the symbol's data along the other, and the L's solid arm leaving its dark end toward the
///   data (`solidEdge`). Tilts of more than about 10° from a multiple of 90° hide the edge
///   from rows; the detector reads such frames when another cue or a QR finder shows, and
///   always below the gate's frame size.
///
/// A cue is only a reason to run the decoder that reads that symbology; what it decodes is
/// zxing-cpp's (or, for Aztec runes, `AztecCore`'s) own check.
///
/// Value type; thread-safe.
struct SymbolCues: Sendable {
    /// Which cues a scan collects.
    struct Kinds: OptionSet, Hashable, Sendable {
        let rawValue: Int
        static let aztec = Kinds(rawValue: 1)
        static let pdf417 = Kinds(rawValue: 2)
        static let dataMatrix = Kinds(rawValue: 4)
        /// PDF417 standing on its end (`walkStanding`): only the gate's full-size look notes it,
        /// on its sparse rows (a standing pattern's bar is as tall as the symbol).
        static let pdf417Standing = Kinds(rawValue: 8)

        /// The kinds for `types` (the 2-D types with a cue).
        init(_ types: Set<MetadataObjectType>) {
            var k: Kinds = []
            if types.contains(.aztec) { k.insert(.aztec) }
            if types.contains(.pdf417) { k.insert(.pdf417) }
            if types.contains(.dataMatrix) { k.insert(.dataMatrix) }
            self = k
        }

        init(rawValue: Int) { self.rawValue = rawValue }

        /// The types these kinds stand for.
        var types: Set<MetadataObjectType> {
            var t: Set<MetadataObjectType> = []
            if contains(.aztec) { t.insert(.aztec) }
            if contains(.pdf417) { t.insert(.pdf417) }
            if contains(.dataMatrix) { t.insert(.dataMatrix) }
            return t
        }
    }

    /// Aztec bullseye centres and module sizes (pixels of the scanned image).
    var bullseyes: [FinderEvidence.Finder] = []
    /// Where a PDF417 start or stop pattern's widest bar was crossed in three or more rows.
    var pdf417: [CGPoint] = []
    /// Every row's crossing of a start or stop pattern so far (`addPDF417Hit`).
    var pdf417Hits: [PatternHit] = []
    /// The column extents walked for a standing PDF417 pattern, one per dark run walked
    /// (`walkStanding`).
    var standingWalked: [CGRect] = []
    /// The cues of `pdf417` a column walk found (a symbol standing on its end).
    var standingPDF417: [CGPoint] = []
    /// Each Data Matrix timing edge seen, as a segment along its row (height 0).
    var dataMatrix: [CGRect] = []

    /// The kinds with at least one cue.
    var seen: Kinds {
        var k: Kinds = []
        if !bullseyes.isEmpty { k.insert(.aztec) }
        if !pdf417.isEmpty { k.insert(.pdf417) }
        if !dataMatrix.isEmpty { k.insert(.dataMatrix) }
        return k
    }

    /// These cues in the pixels of an image `factor` times larger.
    func scaled(by factor: Double) -> SymbolCues {
        var out = self
        out.bullseyes = bullseyes.map { $0.scaled(by: factor) }
        out.pdf417 = pdf417.map { CGPoint(x: $0.x * factor, y: $0.y * factor) }
        out.standingPDF417 = standingPDF417.map { CGPoint(x: $0.x * factor, y: $0.y * factor) }
        out.dataMatrix = dataMatrix.map {
            CGRect(x: $0.minX * factor, y: $0.minY * factor, width: $0.width * factor, height: $0.height * factor)
        }
        return out
    }

    /// These cues without those inside `codes` (each a convex polygon, pixels): a QR code's
    /// modules make ladders, bullseye-like rings and bar patterns of their own, and a symbol
    /// cannot lie inside another. A Data Matrix edge counts by its midpoint.
    func outside(_ codes: [[CGPoint]]) -> SymbolCues {
        let polygons = codes.filter { $0.count >= 3 }
        guard !polygons.isEmpty else { return self }
        let free = { (p: CGPoint) in !polygons.contains { Self.convexPolygon($0, contains: p) } }
        var out = self
        out.bullseyes = bullseyes.filter { free($0.centre) }
        out.pdf417 = pdf417.filter(free)
        out.standingPDF417 = standingPDF417.filter(free)
        out.dataMatrix = dataMatrix.filter { free(CGPoint(x: $0.midX, y: $0.midY)) }
        return out
    }

    /// These cues without the Data Matrix edges whose ladder is faint in `gray` (the image the
    /// cues' pixels refer to): the light modules along the edge's row lighter than the dark
    /// ones by under `minimum` levels on average. The full-size look's threshold (offset 0)
    /// turns a camera's sensor noise on a plain surface into runs, which now and then line up
    /// as a ladder; a printed symbol's modules differ by far more.
    func withoutFaintEdges(in gray: PixelBuffer, minimum: Double) -> SymbolCues {
        guard !dataMatrix.isEmpty, gray.pixelFormat == .gray else { return self }
        var out = self
        out.dataMatrix = withExtendedLifetime(gray) {
            let pixels = Thresholded(gray)
            return dataMatrix.filter { edge in
                let y = Int(edge.minY), x0 = max(0, Int(edge.minX)), x1 = min(pixels.width, Int(edge.maxX))
                guard y >= 0, y < pixels.height, x1 - x0 >= 2 else { return false }
                return Self.contrast(pixels.row(y) + x0, count: x1 - x0) >= minimum
            }
        }
        return out
    }

    /// The mean of the values above their mean less the mean of the others.
    static func contrast(_ values: UnsafePointer<UInt8>, count: Int) -> Double {
        levels(values, count: count).map { $0.light - $0.dark } ?? 0
    }

    /// The mean of the values above their mean (light) and of the others (dark); nil when all
    /// are equal.
    static func levels(_ values: UnsafePointer<UInt8>, count: Int) -> (light: Double, dark: Double)? {
        guard count > 0 else { return nil }
        var sum = 0
        for i in 0..<count { sum += Int(values[i]) }
        let mean = Double(sum) / Double(count)
        var high = 0, highCount = 0, low = 0
        for i in 0..<count {
            let v = Int(values[i])
            if Double(v) > mean {
                high += v
                highCount += 1
            } else {
                low += v
            }
        }
        guard highCount > 0, highCount < count else { return nil }
        return (Double(high) / Double(highCount), Double(low) / Double(count - highCount))
    }

    /// Whether `p` lies inside the convex polygon `corners` (either winding) or on its edge.
    static func convexPolygon(_ corners: [CGPoint], contains p: CGPoint) -> Bool {
        var sign = 0.0
        for i in corners.indices {
            let a = corners[i], b = corners[(i + 1) % corners.count]
            let cross = (b.x - a.x) * (p.y - a.y) - (b.y - a.y) * (p.x - a.x)
            if cross == 0 { continue }
            if sign == 0 {
                sign = cross
            } else if (cross > 0) != (sign > 0) {
                return false
            }
        }
        return true
    }

    /// Both sets of cues.
    static func + (a: SymbolCues, b: SymbolCues) -> SymbolCues {
        SymbolCues(
            bullseyes: a.bullseyes + b.bullseyes, pdf417: a.pdf417 + b.pdf417, standingPDF417: a.standingPDF417 + b.standingPDF417,
            dataMatrix: a.dataMatrix + b.dataMatrix)
    }

    /// At most this many cues of each kind per image (a textured frame does not grow the lists).
    static let limit = 16

    /// Tests the runs of row `y` (run `k` spans `starts[k]..<starts[k + 1]`, `n` runs; the first
    /// dark when `firstDark`) for the cues of `kinds`, appending what it finds. The runs' colours
    /// come from the scanned row, not from `binary.pixel`: a look may leave a code's pixels flat
    /// in its rows only (`ThresholdedOnDemand`), the row's first pixel among them.
    ///
    /// Two passes over the runs (this runs on every scanned row of every finder look, and
    /// texture under the full-size look's threshold makes many short runs). The first tests
    /// each Aztec window, one per dark run, outright: sensor noise makes runs of 1–3 px whose
    /// streaks seldom break. The second tests PDF417 and Data Matrix: a PDF417 pattern's widest
    /// bar is dark, so each dark run is tested once as the bar of all four patterns; a window of
    /// equal runs (`equalRuns`) can only pass where every two neighbours in it are within
    /// 3.2-fold, so the pass keeps where the current streak of such neighbours began and tests
    /// a Data Matrix window only inside one. The cues found, and their order, are those of
    /// testing every window of every kind in turn (`SymbolCueScanTests` compares both on random
    /// runs and placed symbols).
    static func scanRow<Binary: FinderBinaryImage>(
        _ binary: Binary, y: Int, starts: UnsafeMutablePointer<Int>, runs n: Int, firstDark: Bool, kinds: Kinds,
        into cues: inout SymbolCues
    ) {
        // A standing PDF417 symbol (`walkStanding`): a row inside its start or stop pattern's
        // widest bar may hold no other run.
        if kinds.contains(.pdf417Standing) && cues.pdf417.count < limit && cues.standingWalked.count < standingWalkLimit {
            var k = firstDark ? 0 : 1
            while k < n {
                if starts[k &+ 1] &- starts[k] >= standingRunMinimum {
                    cues.walkStanding(binary, x0: starts[k], x1: starts[k &+ 1], y: y)
                    if cues.standingWalked.count >= standingWalkLimit || cues.pdf417.count >= limit { break }
                }
                k &+= 2
            }
        }
        guard n >= 7 else { return }
        let aztec = kinds.contains(.aztec) && cues.bullseyes.count < limit && n >= 9
        let pdf = kinds.contains(.pdf417) && cues.pdf417.count < limit && cues.pdf417Hits.count < 16 * limit && n >= 8
        var dm = kinds.contains(.dataMatrix) && cues.dataMatrix.count < limit && n >= 10
        guard aztec || pdf || dm else { return }
        // Run k is dark when its first pixel is: runs alternate from the row's first pixel.
        @inline(__always) func dark(_ k: Int) -> Bool { (k & 1 == 0) == firstDark }
        @inline(__always) func len(_ k: Int) -> Int { starts[k &+ 1] &- starts[k] }
        // PDF417 crossings of this row, kept until the end so that they are noted pattern by
        // pattern, each from left to right (the order decides which crossing stands for a cue).
        var crossings: [(pattern: Int, hit: PatternHit)] = []
        // Runs `streak...j` are each within 3.2-fold of the next.
        var streak = 0
        // The first Data Matrix window still to test (a ladder found skips the windows inside it).
        var dmNext = 0
        // Aztec: the window k = c - 4 ... c + 4 around each dark run c, its seven middle runs one
        // module each (a loop of its own: every other run, and fewer values for the second pass
        // to keep in registers).
        if aztec {
            var c = dark(4) ? 4 : 5
            while c &+ 5 <= n {
                if let inner = equalRuns(7, from: c &- 3, starts: starts), 14 &* len(c &- 4) >= inner, 14 &* len(c &+ 4) >= inner,
                    ringsMirrored(len(c &- 1), len(c &+ 1)), ringsMirrored(len(c &- 2), len(c &+ 2)),
                    ringsMirrored(len(c &- 3), len(c &+ 3))
                {
                    let total = inner * 9 / 7
                    let cx = starts[c] &+ len(c) / 2
                    if !cues.bullseyes.contains(where: { abs(Int($0.centre.x) - cx) < total / 2 && abs(Int($0.centre.y) - y) < total / 2 }),
                        ringCheck(binary, cx, y, 0, 1, total), ringCheck(binary, cx, y, 1, 1, total),
                        ringCheck(binary, cx, y, 1, -1, total)
                    {
                        cues.bullseyes.append(
                            FinderEvidence.Finder(centre: CGPoint(x: cx, y: y), module: Double(total) / 9, dark: true))
                        if cues.bullseyes.count >= limit { break }
                    }
                }
                c &+= 2
            }
        }
        guard pdf || dm else { return }
        var j = 0
        while j < n {
            if dm && j > 0 {
                let a = len(j &- 1), b = len(j)
                // A select, not a branch: in noise it goes either way.
                streak = 5 &* Swift.max(a, b) > 16 &* Swift.min(a, b) ? j : streak
            }
            // PDF417: every pattern's widest bar is dark, with a one-module run beside it, to its
            // right (patterns 0 and 2 start at the bar) or to its left (1 and 3 end at it). The
            // bar at least 10/3 of that run (7 or 8 modules within 1.5 against one within 0.5)
            // rejects most runs before the full comparison.
            if pdf && dark(j) {
                let bar = len(j)
                @inline(__always) func cross(_ p: Int, from k: Int) {
                    if matches(pdf417Patterns[p], from: k, len) != nil {
                        crossings.append((p, PatternHit(x: starts[j] &+ bar / 2, y: y, width: bar, pattern: p)))
                    }
                }
                if j &+ 8 <= n && 3 &* bar >= 10 &* len(j &+ 1) {
                    cross(0, from: j)
                    if j &+ 9 <= n { cross(2, from: j) }
                }
                if j >= 7 && 3 &* bar >= 10 &* len(j &- 1) {
                    cross(1, from: j &- 7)
                    if j >= 8 { cross(3, from: j &- 8) }
                }
            }
            // Data Matrix: the ten runs k = j - 9 ... j.
            if dm && j >= 9 && streak <= j &- 9 && j &- 9 >= dmNext, equalRuns(10, from: j &- 9, starts: starts) != nil {
                let k = j &- 9
                // The whole ladder: as many further equal runs as follow.
                var end = k &+ 10
                let total10 = starts[end] &- starts[k]
                while end < n, 10 &* len(end) * 10 >= total10 * 6, 10 &* len(end) * 10 <= total10 * 15 { end &+= 1 }
                if timingEdge(binary, y: y, starts: starts, from: k, to: end, firstDark: dark(k)) {
                    let x0 = starts[k], x1 = starts[end]
                    cues.dataMatrix.append(CGRect(x: x0, y: y, width: x1 - x0, height: 0))
                    if cues.dataMatrix.count >= limit { dm = false }
                }
                dmNext = end
            }
            j &+= 1
        }
        for p in pdf417Patterns.indices {
            for c in crossings where c.pattern == p { cues.addPDF417Hit(c.hit) }
        }
    }

    /// Whether the ladder of equal runs `k..<end` of row `y` (`firstDark`: run `k` is dark) is a
    /// Data Matrix timing edge: the quiet zone along one side of it and the symbol's data along
    /// the other (`quietAlongside`); the L's solid arm leaving one dark end toward the data
    /// (`solidPath`), where the timing module two along starts data, not another solid line
    /// (stripes and fences have one at each); and the corner there or the one at the ladder's
    /// other end checks out: light beside the arm on its outer side (`quietBeside`: the L has
    /// the quiet zone all round its outside), or, one module beyond the other end (the light
    /// corner module the row merges with the quiet zone), the other timing edge alternating
    /// across the rows toward the data (`timingAcross`; a row crossing a turned symbol may
    /// leave the edge before that end). Texture that mimics the rest rarely does either.
    static func timingEdge<Binary: FinderBinaryImage>(
        _ binary: Binary, y: Int, starts: UnsafeMutablePointer<Int>, from k: Int, to end: Int, firstDark: Bool
    ) -> Bool {
        let x0 = starts[k], x1 = starts[end]
        let module = Double(x1 - x0) / Double(end - k)
        guard let side = quietAlongside(binary, x0, x1, y, module) else { return false }
        let mid = { (r: Int) in starts[r] + (starts[r + 1] - starts[r]) / 2 }
        let lastDark = ((end - 1 - k) & 1 == 0) == firstDark
        // Three quarters of a module outside the arm's outer edge: clear of it at small turns.
        let gap = Int((0.75 * module).rounded(.up))
        // The corner module's middle column beyond the other end.
        let beyondEnd = Int((Double(x1) + module / 2 - 0.5).rounded()), beforeStart = Int((Double(x0) - module / 2 - 0.5).rounded())
        // The module two along is no solid line. Under 2.5 px a module, it is followed parallel
        // to the arm: a walk of its own, a pixel sideways, reaches the next column of modules,
        // and a line through the data lost one corner in six.
        func dataBeside(_ arm: [Int], _ r: Int) -> Bool {
            module < 2.5 ? !solidAlong(binary, arm, mid(r) - arm[0], y, side) : !solidEdge(binary, mid(r), y, side, module)
        }
        if firstDark, let arm = solidPath(binary, mid(k), y, side, module), dataBeside(arm, k + 2)
            && (quietBeside(binary, x0 - gap, y, side, module) || timingAcross(binary, beyondEnd, y, side, module))
        {
            return true
        }
        guard lastDark, let arm = solidPath(binary, mid(end - 1), y, side, module) else { return false }
        return dataBeside(arm, end - 3)
            && (quietBeside(binary, x1 - 1 + gap, y, side, module) || timingAcross(binary, beforeStart, y, side, module))
    }

    /// Whether the column at `x`, from row `y` across four modules toward `side` (−1 up, +1
    /// down), is light in at least 90 % of its pixels (the quiet zone beside the L's solid arm).
    static func quietBeside<Binary: FinderBinaryImage>(_ binary: Binary, _ x: Int, _ y: Int, _ side: Int, _ module: Double) -> Bool {
        let length = Int((4 * module).rounded(.up))
        guard x >= 0, x < binary.width, y + side * length >= 0, y + side * length < binary.height else { return false }
        var dark = 0
        for step in 0...length where binary.pixel(x, y + side * step) == 0 { dark += 1 }
        return 10 * dark <= length + 1
    }

    /// Whether, from row `y` toward `side` (−1 up, +1 down), the column at `x` (or one a
    /// quarter module to either side: a turned symbol drifts off a column) alternates module
    /// by module: six or more changes within 7.5 modules (the shortest side has eight), each
    /// run after the first 0.5–1.6 modules long and none longer. Four changes within 5.5
    /// modules let random texture through one time in five.
    static func timingAcross<Binary: FinderBinaryImage>(_ binary: Binary, _ x: Int, _ y: Int, _ side: Int, _ module: Double) -> Bool {
        let reach = Int((7.5 * module).rounded(.up))
        guard y + side * reach >= 0, y + side * reach < binary.height else { return false }
        let d = max(1, Int((module / 4).rounded()))
        columns: for cx in [x, x - d, x + d] where cx >= 0 && cx < binary.width {
            var colour = binary.pixel(cx, y), last = 0, changes = 0
            for step in 1...reach {
                let v = binary.pixel(cx, y + side * step)
                if v != colour {
                    let run = Double(step - last)
                    if run > 1.6 * module || (changes > 0 && run < 0.5 * module) { continue columns }
                    changes += 1
                    last = step
                    colour = v
                } else if Double(step - last) > 1.6 * module {
                    continue columns
                }
            }
            if changes >= 6 { return true }
        }
        return false
    }

    /// The total length of the `count` runs from `k` when each is one module of their mean
    /// (within 0.5–1.6 of it; perspective and print gain make runs unequal) and the mean is at
    /// least 1.5 pixels; nil otherwise.
    @inline(__always)
    static func equalRuns(_ count: Int, from k: Int, _ len: (Int) -> Int) -> Int? {
        // Two runs within 0.5–1.6 of one mean differ at most 3.2-fold: the first pair rejects
        // most windows of texture before the sums.
        let a = len(k), b = len(k &+ 1)
        guard 5 &* a <= 16 &* b, 5 &* b <= 16 &* a else { return nil }
        var total = 0
        for i in 0..<count { total &+= len(k &+ i) }
        guard 2 &* total >= 3 &* count else { return nil }
        for i in 0..<count {
            let r = len(k &+ i) &* count
            // r/total within [0.5, 1.6] of one run: 2r ≥ total and 10r ≤ 16 total.
            guard 2 &* r >= total, 10 &* r <= 16 &* total else { return nil }
        }
        return total
    }

    /// `equalRuns` of a row's runs (run `k` spans `starts[k]..<starts[k + 1]`): their total is
    /// one difference of starts, and every run is within 0.5–1.6 of the mean when the shortest
    /// and the longest are. No test until all are read: in sensor noise each test of a run goes
    /// either way, and a mispredicted branch per run cost more than reading the rest.
    @inline(__always)
    static func equalRuns(_ count: Int, from k: Int, starts: UnsafeMutablePointer<Int>) -> Int? {
        let total = starts[k &+ count] &- starts[k]
        var shortest = Int.max, longest = 0
        var previous = starts[k]
        for i in 1...count {
            let next = starts[k &+ i]
            shortest = Swift.min(shortest, next &- previous)
            longest = Swift.max(longest, next &- previous)
            previous = next
        }
        // Bitwise `&` of the three: one branch.
        let pass = (2 &* total >= 3 &* count ? 1 : 0) & (2 &* shortest &* count >= total ? 1 : 0)
            & (10 &* longest &* count <= 16 &* total ? 1 : 0)
        return pass != 0 ? total : nil
    }

    /// Whether `a` and `b`, one ring crossed on both sides of a bullseye's centre, differ by at
    /// most 2 px or a quarter of their sum (5:3, for perspective). A QR code's modules make many
    /// windows of one- and two-module runs that pass `equalRuns`, seldom mirrored about their
    /// middle: each window this rejects is three `ringCheck`s saved.
    @inline(__always)
    static func ringsMirrored(_ a: Int, _ b: Int) -> Bool { 4 &* Swift.max(a &- b, b &- a) <= Swift.max(8, a &+ b) }

    /// The bullseye along direction (dx, dy) through (cx, cy): the centre run and three more on
    /// each side, all one module, their total within 2× of the row's, then a fourth dark run
    /// each way of at least half a module (`expected`: the row's nine runs).
    static func ringCheck<Binary: FinderBinaryImage>(
        _ binary: Binary, _ cx: Int, _ cy: Int, _ dx: Int, _ dy: Int, _ expected: Int
    ) -> Bool {
        let w = binary.width, h = binary.height
        let centre = binary.pixel(cx, cy)
        // The fourth run may hold the second dark ring and dark modules beyond it.
        let maxRun = expected / 2
        // What the checks at the end allow each of the seven runs, so that a walk stops as soon
        // as one is longer (a total of at most 14/9 `expected`, a run at most 1.6 of its mean:
        // 45 r ≤ 16 `expected`; the centre run holds both ways' first runs).
        let ringRun = 16 * expected / 45
        // The lengths of the centre run (from cx, cy) and the next four, walking one way.
        func walk(_ sx: Int, _ sy: Int) -> (Int, Int, Int, Int, Int)? {
            var x = cx, y = cy, colour = centre, state = 0
            var c = (0, 0, 0, 0, 0)
            while true {
                // A symbol printed without a quiet zone: the second dark ring may run to the edge.
                guard x >= 0, y >= 0, x < w, y < h else { return state == 4 ? c : nil }
                let v = binary.pixel(x, y)
                if v != colour {
                    state += 1
                    colour = v
                    if state == 5 { return c }
                }
                let n: Int, most: Int
                switch state {
                case 0: c.0 += 1; n = c.0; most = ringRun
                case 1: c.1 += 1; n = c.1; most = ringRun
                case 2: c.2 += 1; n = c.2; most = ringRun
                case 3: c.3 += 1; n = c.3; most = ringRun
                default: c.4 += 1; n = c.4; most = maxRun
                }
                if n > most { return nil }
                x += sx
                y += sy
            }
        }
        // Three rings one way within 3.2-fold of one another (as runs within 0.5–1.6 of one mean
        // are) before the walk the other way.
        guard let a = walk(dx, dy), 5 * Swift.max(a.1, a.2, a.3) <= 16 * Swift.min(a.1, a.2, a.3),
            let b = walk(-dx, -dy)
        else { return false }
        // A tuple, not an Array: no allocation per call (texture sends many windows here).
        var runs = (a.3, a.2, a.1, a.0 + b.0 - 1, b.1, b.2, b.3)
        let total = a.3 + a.2 + a.1 + (a.0 + b.0 - 1) + b.1 + b.2 + b.3
        guard 2 * total >= expected * 7 / 9, total * 9 <= 2 * 7 * expected,
            let inner = withUnsafeBytes(of: &runs, { raw in
                let r = raw.bindMemory(to: Int.self)
                return equalRuns(7, from: 0, { r[$0] })
            })
        else { return false }
        // The second dark ring: at least half a module (a dark mode-message module of a
        // compact symbol may lengthen it).
        return 14 * a.4 >= inner && 14 * b.4 >= inner
    }

    /// A start or stop pattern of PDF417 as run widths in modules, and whether it begins dark.
    struct Pattern: Sendable {
        let widths: [Int]
        let firstDark: Bool
        /// The run of the widest bar.
        let bar: Int
        /// The one-module run next to the widest bar (inside the pattern).
        let beside: Int
        /// The modules the pattern spans (stored: `matches` runs for most runs of every row).
        let modules: Int

        init(widths: [Int], firstDark: Bool, bar: Int) {
            self.widths = widths
            self.firstDark = firstDark
            self.bar = bar
            beside = bar == 0 ? 1 : bar - 1
            modules = widths.reduce(0, +)
        }
    }

    /// Start 8:1:1:1:1:1:1:3 and stop 7:1:1:3:1:1:1:2:1 (ISO/IEC 15438 §5.3), as read left to
    /// right in an upright symbol and in one turned by 180°.
    static let pdf417Patterns = [
        Pattern(widths: [8, 1, 1, 1, 1, 1, 1, 3], firstDark: true, bar: 0),
        Pattern(widths: [3, 1, 1, 1, 1, 1, 1, 8], firstDark: false, bar: 7),
        Pattern(widths: [7, 1, 1, 3, 1, 1, 1, 2, 1], firstDark: true, bar: 0),
        Pattern(widths: [1, 2, 1, 1, 1, 3, 1, 1, 7], firstDark: true, bar: 8),
    ]

    /// When the runs from `k` have `pattern`'s widths (each within half a module, the widest
    /// within 1.5, modules ≥ 1.5 px), the offset of its widest bar.
    @inline(__always)
    static func matches(_ pattern: Pattern, from k: Int, _ len: (Int) -> Int) -> Int? {
        let m = pattern.modules
        var total = 0
        for i in pattern.widths.indices { total &+= len(k &+ i) }
        guard 2 &* total >= 3 &* m else { return nil }
        for (i, e) in pattern.widths.enumerated() {
            // |r/u − e| ≤ tolerance with u = total/m, as 2·(r·m − e·total) within ±(2·tol)·total.
            let d = 2 &* (len(k &+ i) &* m &- e &* total)
            let tol = e >= 7 ? 3 : 1
            guard d <= tol &* total, d >= -tol &* total else { return nil }
        }
        return pattern.bar
    }

    /// One row's crossing of a PDF417 start or stop pattern: its widest bar's middle and width
    /// (pixels) and which of `pdf417Patterns` it is.
    struct PatternHit: Sendable {
        var x: Int, y: Int, width: Int, pattern: Int
    }

    /// Notes a crossing; the third crossing of the same pattern in other rows, its bar as wide
    /// (within 30 %) and drifting sideways no more than it descends (a symbol turned less than
    /// 45°), makes a cue. Every row of a PDF417 symbol repeats its start and stop patterns; a
    /// texture or print line rarely repeats eight widths in three rows.
    mutating func addPDF417Hit(_ hit: PatternHit) {
        let near = pdf417Hits.filter { h in
            h.pattern == hit.pattern && h.y != hit.y && 10 * abs(h.width - hit.width) <= 3 * max(h.width, hit.width)
                && abs(h.x - hit.x) <= abs(h.y - hit.y) + hit.width && abs(h.y - hit.y) <= 12 * hit.width
        }
        pdf417Hits.append(hit)
        guard Set(near.map(\.y)).count >= 2,
            !pdf417.contains(where: { abs(Int($0.x) - hit.x) < 4 * hit.width && abs(Int($0.y) - hit.y) < 16 * hit.width })
        else { return }
        pdf417.append(CGPoint(x: hit.x, y: hit.y))
    }

    /// Which side of row `y` the symbol lies on (−1 above, +1 below) when the row 1.5 modules
    /// away on the other side is one colour from `x0` to `x1` (at least 90 %: the quiet zone, a
    /// light one or, for an inverted symbol, a dark one) and the row on this side is mixed
    /// (20–80 % dark: the symbol's data); nil otherwise.
    static func quietAlongside<Binary: FinderBinaryImage>(_ binary: Binary, _ x0: Int, _ x1: Int, _ y: Int, _ module: Double)
        -> Int?
    {
        let d = max(2, Int((1.5 * module).rounded()))
        guard y - d >= 0, y + d < binary.height, x1 > x0 else { return nil }
        func darkShare(_ row: Int) -> Double {
            var dark = 0
            for x in x0..<x1 where binary.pixel(x, row) == 0 { dark += 1 }
            return Double(dark) / Double(x1 - x0)
        }
        let above = darkShare(y - d), below = darkShare(y + d)
        let quiet = { (share: Double) in share <= 0.1 || share >= 0.9 }
        let mixed = { (share: Double) in share >= 0.2 && share <= 0.8 }
        if quiet(above) && mixed(below) { return 1 }
        if quiet(below) && mixed(above) { return -1 }
        return nil
    }

    /// Whether a solid line of the colour at (x, y) runs from there across the rows toward
    /// `side` (−1 up, +1 down) for four modules: the L's other arm, which meets the timing edge
    /// at its dark end. The walk follows the line at most a pixel sideways every third row (a
    /// symbol turned up to about 18°) and allows no gap.
    static func solidEdge<Binary: FinderBinaryImage>(_ binary: Binary, _ x: Int, _ y: Int, _ side: Int, _ module: Double) -> Bool {
        solidPath(binary, x, y, side, module) != nil
    }

    /// The columns `solidEdge` walks, the first at row `y` and one per row after it; nil where
    /// it finds no solid line.
    static func solidPath<Binary: FinderBinaryImage>(_ binary: Binary, _ x: Int, _ y: Int, _ side: Int, _ module: Double) -> [Int]? {
        guard x >= 1, x < binary.width - 1 else { return nil }
        let colour = binary.pixel(x, y)
        let length = Int((4 * module).rounded(.up))
        var path = [x]
        path.reserveCapacity(length + 1)
        var cx = x, sinceShift = 3
        for step in 1...length {
            let yy = y + side * step
            guard yy >= 0, yy < binary.height else { return nil }
            if binary.pixel(cx, yy) == colour {
                sinceShift += 1
            } else {
                guard sinceShift >= 3,
                    let nx = [cx - 1, cx + 1].first(where: { $0 >= 0 && $0 < binary.width && binary.pixel($0, yy) == colour })
                else { return nil }
                cx = nx
                sinceShift = 0
            }
            path.append(cx)
        }
        return path
    }

    /// Whether every pixel of `path` (`solidPath`'s columns from row `y` toward `side`) moved
    /// `dx` columns is of the colour of the path's first pixel.
    static func solidAlong<Binary: FinderBinaryImage>(_ binary: Binary, _ path: [Int], _ dx: Int, _ y: Int, _ side: Int) -> Bool {
        guard let first = path.first else { return false }
        let colour = binary.pixel(first, y)
        for (step, x) in path.enumerated() {
            let xx = x + dx, yy = y + side * step
            guard xx >= 0, xx < binary.width, yy >= 0, yy < binary.height, binary.pixel(xx, yy) == colour else { return false }
        }
        return true
    }
}
