import Foundation

/// Signs of the 2-D symbologies without QR finder patterns, noted by `FinderEvidence`'s row scan
/// on its way (the run lengths it computes for QR finders are most of what these tests need):
///
/// - Aztec: the bullseye, seven runs of one module each centred on a dark one (the concentric
///   squares seen across their centre), confirmed on the vertical and both diagonals through
///   that centre as QR finders are. A square ring crossed along any line through its centre
///   gives runs of equal length on both sides, so rotation keeps the pattern.
/// - PDF417: the start pattern (bars and spaces 8:1:1:1:1:1:1:3 modules) or the stop pattern
///   (7:1:1:3:1:1:1:2:1), either way round, whose widest bar continues straight down or up for
///   at least its own width: every row of the symbol repeats the two patterns, so they form
///   solid columns no print or texture line does.
/// - Data Matrix: a timing edge, ten or more alternating runs of one module each (its top edge
///   alternates dark and light; so does the right one, which a rotation by a multiple of 90°
///   lays along the row), with the light quiet zone running along one side of it, 1.5 modules
///   away, and the symbol's data along the other. Tilts of more than about 10° from a
///   multiple of 90° hide the edge from rows; the detector reads such frames when another cue
///   or a QR finder shows, and always below the gate's frame size.
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
    /// Where a PDF417 start or stop pattern's widest bar was crossed.
    var pdf417: [CGPoint] = []
    /// The middle of each Data Matrix timing edge seen.
    var dataMatrix: [CGPoint] = []

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
        out.bullseyes = bullseyes.map { f in
            var f = f
            f.centre = CGPoint(x: f.centre.x * factor, y: f.centre.y * factor)
            f.module *= factor
            return f
        }
        out.pdf417 = pdf417.map { CGPoint(x: $0.x * factor, y: $0.y * factor) }
        out.dataMatrix = dataMatrix.map { CGPoint(x: $0.x * factor, y: $0.y * factor) }
        return out
    }

    /// Both sets of cues.
    static func + (a: SymbolCues, b: SymbolCues) -> SymbolCues {
        SymbolCues(bullseyes: a.bullseyes + b.bullseyes, pdf417: a.pdf417 + b.pdf417, dataMatrix: a.dataMatrix + b.dataMatrix)
    }

    /// At most this many cues of each kind per image (a textured frame does not grow the lists).
    static let limit = 16

    /// Tests the runs of row `y` (run `k` spans `starts[k]..<starts[k + 1]`, `n` runs) for the
    /// cues of `kinds`, appending what it finds.
    static func scanRow<Binary: FinderBinaryImage>(
        _ binary: Binary, y: Int, starts: UnsafeMutablePointer<Int>, runs n: Int, kinds: Kinds, into cues: inout SymbolCues
    ) {
        guard n >= 7 else { return }
        // Run k is dark when its first pixel is: runs alternate from the row's first pixel.
        let firstDark = binary.pixel(0, y) == 0
        @inline(__always) func dark(_ k: Int) -> Bool { (k & 1 == 0) == firstDark }
        @inline(__always) func len(_ k: Int) -> Int { starts[k &+ 1] &- starts[k] }
        if kinds.contains(.aztec) && cues.bullseyes.count < limit {
            var k = 0
            while k &+ 7 <= n {
                let c = k &+ 3
                if dark(c), let total = equalRuns(7, from: k, len) {
                    let cx = starts[c] &+ len(c) / 2
                    if !cues.bullseyes.contains(where: { abs(Int($0.centre.x) - cx) < total / 2 && abs(Int($0.centre.y) - y) < total / 2 }),
                        ringCheck(binary, cx, y, 0, 1, total), ringCheck(binary, cx, y, 1, 1, total),
                        ringCheck(binary, cx, y, 1, -1, total)
                    {
                        cues.bullseyes.append(
                            FinderEvidence.Finder(centre: CGPoint(x: cx, y: y), module: Double(total) / 7, dark: true))
                        if cues.bullseyes.count >= limit { break }
                    }
                }
                k &+= 1
            }
        }
        if kinds.contains(.pdf417) && cues.pdf417.count < limit && n >= 8 {
            for pattern in pdf417Patterns {
                var k = 0
                while k &+ pattern.widths.count <= n {
                    if dark(k) == pattern.firstDark, let bar = matches(pattern, from: k, len) {
                        let wide = k &+ bar
                        let x = starts[wide] &+ len(wide) / 2
                        if darkColumn(binary, x, y, atLeast: len(wide)),
                            !cues.pdf417.contains(where: { abs(Int($0.x) - x) < len(wide) && abs(Int($0.y) - y) < 8 * len(wide) })
                        {
                            cues.pdf417.append(CGPoint(x: x, y: y))
                            if cues.pdf417.count >= limit { break }
                        }
                    }
                    k &+= 1
                }
            }
        }
        if kinds.contains(.dataMatrix) && cues.dataMatrix.count < limit && n >= 10 {
            var k = 0
            while k &+ 10 <= n {
                guard equalRuns(10, from: k, len) != nil else {
                    k &+= 1
                    continue
                }
                // The whole ladder: as many further equal runs as follow.
                var end = k &+ 10
                let total10 = starts[end] &- starts[k]
                while end < n, 10 &* len(end) * 10 >= total10 * 6, 10 &* len(end) * 10 <= total10 * 15 { end &+= 1 }
                let x0 = starts[k], x1 = starts[end]
                let module = Double(x1 - x0) / Double(end - k)
                if quietAlongside(binary, x0, x1, y, module) {
                    cues.dataMatrix.append(CGPoint(x: (x0 + x1) / 2, y: y))
                    if cues.dataMatrix.count >= limit { break }
                }
                k = end
            }
        }
    }

    /// The total length of the `count` runs from `k` when each is one module of their mean
    /// (within 0.5–1.6 of it; perspective and print gain make runs unequal) and the mean is at
    /// least 1.5 pixels; nil otherwise.
    @inline(__always)
    static func equalRuns(_ count: Int, from k: Int, _ len: (Int) -> Int) -> Int? {
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

    /// The bullseye along direction (dx, dy) through (cx, cy): the centre run and three more
    /// on each side, all one module, their total within 2× of `expected` (the row's seven runs).
    static func ringCheck<Binary: FinderBinaryImage>(
        _ binary: Binary, _ cx: Int, _ cy: Int, _ dx: Int, _ dy: Int, _ expected: Int
    ) -> Bool {
        let w = binary.width, h = binary.height
        let centre = binary.pixel(cx, cy)
        let maxRun = expected / 2
        func walk(_ sx: Int, _ sy: Int) -> (Int, Int, Int, Int)? {
            var x = cx, y = cy, colour = centre, state = 0
            var c = (0, 0, 0, 0)
            while true {
                guard x >= 0, y >= 0, x < w, y < h else { return nil }
                let v = binary.pixel(x, y)
                if v != colour {
                    state += 1
                    colour = v
                    if state == 4 { return c }
                }
                let n: Int
                switch state {
                case 0: c.0 += 1; n = c.0
                case 1: c.1 += 1; n = c.1
                case 2: c.2 += 1; n = c.2
                default: c.3 += 1; n = c.3
                }
                if n > maxRun { return nil }
                x += sx
                y += sy
            }
        }
        guard let a = walk(dx, dy), let b = walk(-dx, -dy) else { return false }
        let runs = [a.3, a.2, a.1, a.0 + b.0 - 1, b.1, b.2, b.3]
        let total = runs.reduce(0, +)
        guard 2 * total >= expected, total <= 2 * expected else { return false }
        return equalRuns(7, from: 0, { runs[$0] }) != nil
    }

    /// A start or stop pattern of PDF417 as run widths in modules, and whether it begins dark.
    struct Pattern: Sendable {
        var widths: [Int]
        var firstDark: Bool
        /// The run of the widest bar.
        var bar: Int
        var modules: Int { widths.reduce(0, +) }
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

    /// Whether column `x` stays dark for `atLeast` pixels through row `y` (down and up together).
    static func darkColumn<Binary: FinderBinaryImage>(_ binary: Binary, _ x: Int, _ y: Int, atLeast: Int) -> Bool {
        guard binary.pixel(x, y) == 0 else { return false }
        var n = 1
        var yy = y + 1
        while yy < binary.height, binary.pixel(x, yy) == 0, n < atLeast {
            n += 1
            yy += 1
        }
        yy = y - 1
        while yy >= 0, binary.pixel(x, yy) == 0, n < atLeast {
            n += 1
            yy -= 1
        }
        return n >= atLeast
    }

    /// Whether the row 1.5 modules above or below `y` is light from `x0` to `x1` (at least 90 %:
    /// a quiet zone) while the row on the other side is not (at least 20 % dark: the symbol).
    static func quietAlongside<Binary: FinderBinaryImage>(_ binary: Binary, _ x0: Int, _ x1: Int, _ y: Int, _ module: Double)
        -> Bool
    {
        let d = max(2, Int((1.5 * module).rounded()))
        guard y - d >= 0, y + d < binary.height, x1 > x0 else { return false }
        func darkShare(_ row: Int) -> Double {
            var dark = 0
            for x in x0..<x1 where binary.pixel(x, row) == 0 { dark += 1 }
            return Double(dark) / Double(x1 - x0)
        }
        let above = darkShare(y - d), below = darkShare(y + d)
        return (above <= 0.1 && below >= 0.2) || (below <= 0.1 && above >= 0.2)
    }
}
