import Foundation

/// The core of an Aztec symbol (ISO/IEC 24778 §6–§7): the bullseye of concentric squares, the
/// orientation marks at its corners and the mode message around it, read by cvcam itself.
///
/// zxing-cpp 1.4 finds the bullseye's corners by following its rings outward from the centre and
/// loses symbols seen at a steep angle, whose rings are no longer squares; it does not read
/// runes (11×11 symbols holding only a mode message) at all. From the bullseye a
/// `SymbolCues` scan saw, this fits a quadrilateral to each of two ring edges (a least-squares
/// line per side, so perspective is measured, not assumed), finds the orientation, and decodes
/// the mode message with its Reed–Solomon check over GF(16): that gives the symbol's size and
/// the map from module coordinates to pixels, which `ScanRun` uses to warp the symbol upright
/// for zxing-cpp, or, for a rune, the payload itself (its value as three decimal digits, as
/// ISO/IEC 24778 Annex A and zxing-cpp 3 report it).
///
/// Threading: stateless; call from any thread.
enum AztecCore {
    /// What the core says about its symbol.
    struct Symbol: Sendable {
        /// A compact symbol (bullseye of 2 dark rings around the centre) or a full-range one (3).
        var compact: Bool
        /// Data layers (0 for a rune).
        var layers: Int
        /// Data codewords (mode message), 0 for a rune.
        var dataCodewords: Int
        /// A rune's value (0–255), nil for a symbol with data layers.
        var rune: Int?
        /// Module coordinates (origin at the centre module's centre, x right and y down in the
        /// upright symbol) to the image's pixels.
        var moduleToImage: Homography

        /// Modules per side (ISO/IEC 24778 table 1; full-range symbols add reference grid lines).
        var dimension: Int {
            if rune != nil { return 11 }
            return compact ? 4 * layers + 11 : 4 * layers + 2 * ((2 * layers + 6) / 15) + 15
        }

        /// The symbol's corners in the image, clockwise from the upright top-left.
        var corners: [CGPoint] {
            let h = Double(dimension) / 2
            return [CGPoint(x: -h, y: -h), CGPoint(x: h, y: -h), CGPoint(x: h, y: h), CGPoint(x: -h, y: h)]
                .map(moduleToImage.apply)
        }
    }

    /// Reads the core around `bullseye` (its centre and module size in `binary`'s pixels,
    /// as `SymbolCues` found it). Nil when no orientation and mode message check out.
    static func read<Binary: FinderBinaryImage>(_ binary: Binary, bullseye: FinderEvidence.Finder) -> Symbol? {
        var cx = Int(bullseye.centre.x), cy = Int(bullseye.centre.y)
        guard cx >= 0, cy >= 0, cx < binary.width, cy < binary.height, binary.pixel(cx, cy) == 0 else { return nil }
        // The middle of the centre module: a ray from near its edge would leave it at once.
        for _ in 0..<2 {
            var l = cx, r = cx, t = cy, b = cy
            while l > 0, binary.pixel(l - 1, cy) == 0 { l -= 1 }
            while r < binary.width - 1, binary.pixel(r + 1, cy) == 0 { r += 1 }
            cx = (l + r) / 2
            while t > 0, binary.pixel(cx, t - 1) == 0 { t -= 1 }
            while b < binary.height - 1, binary.pixel(cx, b + 1) == 0 { b += 1 }
            cy = (t + b) / 2
        }
        guard Double(max(cx - Int(bullseye.centre.x), Int(bullseye.centre.x) - cx)) < bullseye.module,
            Double(max(cy - Int(bullseye.centre.y), Int(bullseye.centre.y) - cy)) < bullseye.module
        else { return nil }
        let centre = CGPoint(x: cx, y: cy)
        // The edge between the light ring 3 and the dark ring 4 (3.5 modules out), then the one
        // between rings 5 and 6 (5.5): the larger one measures perspective better (a full-range
        // symbol's map comes from it when both read) but is data, not a ring, in a compact symbol.
        var first: Symbol?
        for (transition, half) in [(4, 3.5), (6, 5.5)] {
            let points = ringEdge(binary, cx, cy, transition: transition, module: bullseye.module)
            guard let quad = quadrilateral(points, centre: centre),
                let h = try? CodeImaging.homography(
                    from: [CGPoint(x: -half, y: -half), CGPoint(x: half, y: -half), CGPoint(x: half, y: half), CGPoint(x: -half, y: half)],
                    to: quad)
            else { continue }
            guard let symbol = parse(binary, h) else { continue }
            if transition == 6 { return symbol.compact ? (first ?? symbol) : symbol }
            if symbol.compact { return symbol }
            first = symbol
        }
        return first
    }

    /// The eight ways a square can lie (four turns, mirrored or not), as maps of module coordinates.
    static let orientations: [(Int, Int, Int, Int)] = {
        var out: [(Int, Int, Int, Int)] = []
        for mirror in [false, true] {
            // (a, b, c, d): (x, y) → (a·x + b·y, c·x + d·y)
            var m = mirror ? (-1, 0, 0, 1) : (1, 0, 0, 1)
            for _ in 0..<4 {
                out.append(m)
                m = (-m.2, -m.3, m.0, m.1)  // a quarter turn: (x, y) → (−y, x) after m
            }
        }
        return out
    }()

    /// The orientation marks at the corners of the mode-message ring (radius 5 compact, 7 full),
    /// read clockwise from the top-left, three per corner: dark, dark, dark at the top-left;
    /// light, dark, dark at the top-right; dark, light, light at the bottom-right; light at the
    /// bottom-left (ISO/IEC 24778 figure 7).
    static let orientationMarks: UInt32 = 0b111_011_100_000

    /// Orientation and mode message through the module map `h`, trying both symbol sizes and
    /// the eight orientations; the first that checks out.
    static func parse<Binary: FinderBinaryImage>(_ binary: Binary, _ h: Homography) -> Symbol? {
        for radius in [5, 7] {
            for o in orientations {
                let map = { (p: (Int, Int)) -> CGPoint in
                    h.apply(CGPoint(x: Double(o.0 * p.0 + o.1 * p.1), y: Double(o.2 * p.0 + o.3 * p.1)))
                }
                guard let marks = orientationBits(binary, radius, map),
                    (marks ^ orientationMarks).nonzeroBitCount <= 2,
                    let words = modeMessage(binary, radius, map)
                else { continue }
                let compact = radius == 5
                let dataWords = compact ? 2 : 4
                var symbol: Symbol?
                if let value = modeValue(words, dataWords: dataWords) {
                    let layers = compact ? (value >> 6) + 1 : (value >> 11) + 1
                    var blocks = compact ? (value & 0x3F) + 1 : (value & 0x7FF) + 1
                    // Reader initialisation sets the codeword count's top bit (§9).
                    if compact && layers == 1 && blocks > 32 { blocks -= 32 }
                    if !compact && layers <= 22 && blocks > 1024 { blocks -= 1024 }
                    guard blocks <= codewords(layers: layers, compact: compact) else { continue }
                    symbol = Symbol(compact: compact, layers: layers, dataCodewords: blocks, rune: nil, moduleToImage: h)
                } else if compact, let value = modeValue(words.map { $0 ^ 0b1010 }, dataWords: 2) {
                    // A rune: its mode message is XORed with 1010 in every word (Annex A).
                    symbol = Symbol(compact: true, layers: 0, dataCodewords: 0, rune: value, moduleToImage: h)
                }
                guard var s = symbol else { continue }
                // The map in upright module coordinates: the orientation folded in.
                let square = [CGPoint(x: -5, y: -5), CGPoint(x: 5, y: -5), CGPoint(x: 5, y: 5), CGPoint(x: -5, y: 5)]
                guard let upright = try? CodeImaging.homography(
                    from: square, to: square.map { map((Int($0.x), Int($0.y))) })
                else { continue }
                s.moduleToImage = upright
                return s
            }
        }
        return nil
    }

    /// Codewords in a symbol of `layers` layers (ISO/IEC 24778 table 1): bits over word size.
    static func codewords(layers: Int, compact: Bool) -> Int {
        guard layers >= 1, layers <= (compact ? 4 : 32) else { return 0 }
        let bits = ((compact ? 88 : 112) + 16 * layers) * layers
        return bits / wordSize(layers: layers)
    }

    /// Bits per codeword for `layers` layers.
    static func wordSize(layers: Int) -> Int {
        layers <= 2 ? 6 : layers <= 8 ? 8 : layers <= 22 ? 10 : 12
    }

    /// The twelve orientation bits (1 = dark), clockwise from the top-left corner; nil when a
    /// mark falls outside the image.
    static func orientationBits<Binary: FinderBinaryImage>(
        _ binary: Binary, _ r: Int, _ map: ((Int, Int)) -> CGPoint
    ) -> UInt32? {
        var bits: UInt32 = 0
        for d in [(-1, -1), (1, -1), (1, 1), (-1, 1)] {
            let corner = (r * d.0, r * d.1)
            let along = (corner.0, corner.1 - d.1), across = (corner.0 - d.0, corner.1)
            // Clockwise round the ring: at the top-left and bottom-right corners the mark on the
            // vertical side comes first.
            let order = d.0 == d.1 ? [along, corner, across] : [across, corner, along]
            for p in order {
                guard let dark = sample(binary, map(p)) else { return nil }
                bits = bits << 1 | (dark ? 1 : 0)
            }
        }
        return bits
    }

    /// The mode message's 4-bit words (7 compact, 10 full), clockwise from the top-left, skipping
    /// the corner marks and, in a full-range symbol, the reference grid's centre line.
    static func modeMessage<Binary: FinderBinaryImage>(_ binary: Binary, _ r: Int, _ map: ((Int, Int)) -> CGPoint) -> [Int]? {
        var bits: [Bool] = []
        for d in [(-1, -1), (1, -1), (1, 1), (-1, 1)] {
            let corner = (r * d.0, r * d.1)
            let step = d.0 == d.1 ? (-d.0, 0) : (0, -d.1)
            for i in 2...(2 * r - 2) where r == 5 || i != 7 {
                guard let dark = sample(binary, map((corner.0 + i * step.0, corner.1 + i * step.1))) else { return nil }
                bits.append(dark)
            }
        }
        return stride(from: 0, to: bits.count, by: 4).map { i in
            bits[i..<(i + 4)].reduce(0) { $0 << 1 | ($1 ? 1 : 0) }
        }
    }

    /// Whether the pixel nearest `p` is dark; nil outside the image.
    static func sample<Binary: FinderBinaryImage>(_ binary: Binary, _ p: CGPoint) -> Bool? {
        let x = Int(p.x.rounded()), y = Int(p.y.rounded())
        guard x >= 0, y >= 0, x < binary.width, y < binary.height else { return nil }
        return binary.pixel(x, y) == 0
    }

    // MARK: The mode message's code: Reed–Solomon over GF(16) (`ReedSolomon.aztec4`)

    /// The mode message's value when `words` are a codeword with at most half its check words
    /// wrong (the code's correcting power), found by trying every value: 256 (compact) or 65,536
    /// (full range) encodings, each the XOR of per-word tables, since the code is linear.
    static func modeValue(_ words: [Int], dataWords k: Int) -> Int? {
        let n = words.count - k
        // table[i][v]: the check words of a message with v in word i and 0 elsewhere, packed 4 bits each.
        var table = [[UInt64]](repeating: [UInt64](repeating: 0, count: 16), count: k)
        for i in 0..<k {
            for v in 1..<16 {
                var data = [Int](repeating: 0, count: k)
                data[i] = v
                table[i][v] = ReedSolomon.aztec4.checkWords(data, count: n).reduce(0) { $0 << 4 | UInt64($1) }
            }
        }
        let received = words[k...].reduce(UInt64(0)) { $0 << 4 | UInt64($1) }
        let nibbles = UInt64((1 << (4 * n)) - 1) / 15  // 0x…1111: one bit per check word
        for value in 0..<(1 << (4 * k)) {
            var check: UInt64 = 0
            var dataErrors = 0
            for i in 0..<k {
                let v = (value >> (4 * (k - 1 - i))) & 15
                check ^= table[i][v]
                if v != words[i] { dataErrors += 1 }
            }
            var diff = check ^ received
            diff |= diff >> 1
            diff |= diff >> 2
            if dataErrors + (diff & nibbles).nonzeroBitCount <= n / 2 { return value }
        }
        return nil
    }

    // MARK: Geometry

    /// Points on the `transition`-th colour change out from the centre, along 64 rays.
    static func ringEdge<Binary: FinderBinaryImage>(
        _ binary: Binary, _ cx: Int, _ cy: Int, transition: Int, module: Double
    ) -> [CGPoint] {
        var points: [CGPoint] = []
        let reach = module * Double(transition + 3) * 1.5
        for a in 0..<64 {
            let t = 2 * Double.pi * Double(a) / 64
            let dx = cos(t), dy = sin(t)
            var colour = binary.pixel(cx, cy), changes = 0, s = 0.0
            while s < reach {
                s += 0.25
                let x = Int((Double(cx) + dx * s).rounded()), y = Int((Double(cy) + dy * s).rounded())
                guard x >= 0, y >= 0, x < binary.width, y < binary.height else { break }
                let v = binary.pixel(x, y)
                if v != colour {
                    colour = v
                    changes += 1
                    if changes == transition {
                        points.append(CGPoint(x: Double(cx) + dx * (s - 0.125), y: Double(cy) + dy * (s - 0.125)))
                        break
                    }
                }
            }
        }
        return points
    }

    /// The quadrilateral through points on a square's edge (in order round it), clockwise from
    /// any corner: corners from the extreme points, then a least-squares line through the middle
    /// 60 % of each side, and adjacent lines intersected. Nil with fewer than 40 of 64 points.
    static func quadrilateral(_ points: [CGPoint], centre: CGPoint) -> [CGPoint]? {
        guard points.count >= 40 else { return nil }
        func d2(_ a: CGPoint, _ b: CGPoint) -> Double { (a.x - b.x) * (a.x - b.x) + (a.y - b.y) * (a.y - b.y) }
        let i0 = points.indices.max { d2(points[$0], centre) < d2(points[$1], centre) }!
        let i2 = points.indices.max { d2(points[$0], points[i0]) < d2(points[$1], points[i0]) }!
        let p0 = points[i0], p2 = points[i2]
        let side = { (p: CGPoint) in (p2.x - p0.x) * (p.y - p0.y) - (p2.y - p0.y) * (p.x - p0.x) }
        let i1 = points.indices.max { side(points[$0]) < side(points[$1]) }!
        let i3 = points.indices.min { side(points[$0]) < side(points[$1]) }!
        let corners = [i0, i1, i2, i3].sorted()
        guard Set(corners).count == 4 else { return nil }
        var lines: [Line] = []
        for k in 0..<4 {
            let a = corners[k], b = corners[(k + 1) % 4]
            let count = (b - a + points.count) % points.count + 1
            let skip = count / 5
            let side = (skip..<(count - skip)).map { points[(a + $0) % points.count] }
            guard side.count >= 2, let line = Line(fitting: side) else { return nil }
            lines.append(line)
        }
        var quad: [CGPoint] = []
        for k in 0..<4 {
            guard let p = lines[(k + 3) % 4].intersection(lines[k]) else { return nil }
            quad.append(p)
        }
        // Clockwise in a y-down image.
        let v1 = CGPoint(x: quad[1].x - quad[0].x, y: quad[1].y - quad[0].y)
        let v2 = CGPoint(x: quad[2].x - quad[0].x, y: quad[2].y - quad[0].y)
        if v1.x * v2.y - v1.y * v2.x < 0 { quad.reverse() }
        return quad
    }

    /// A straight line: a point on it and a unit direction.
    struct Line {
        var point: CGPoint
        var direction: CGPoint

        /// The total-least-squares line through `points` (their principal axis); nil when they
        /// all coincide.
        init?(fitting points: [CGPoint]) {
            let n = Double(points.count)
            let mx = points.reduce(0) { $0 + $1.x } / n, my = points.reduce(0) { $0 + $1.y } / n
            var sxx = 0.0, sxy = 0.0, syy = 0.0
            for p in points {
                let x = p.x - mx, y = p.y - my
                sxx += x * x
                sxy += x * y
                syy += y * y
            }
            guard sxx + syy > 0 else { return nil }
            let angle = 0.5 * atan2(2 * sxy, sxx - syy)
            point = CGPoint(x: mx, y: my)
            direction = CGPoint(x: cos(angle), y: sin(angle))
        }

        /// Where this line meets `other`; nil when they are parallel.
        func intersection(_ other: Line) -> CGPoint? {
            let det = direction.x * (-other.direction.y) - direction.y * (-other.direction.x)
            guard abs(det) > 1e-9 else { return nil }
            let bx = other.point.x - point.x, by = other.point.y - point.y
            let t = (bx * (-other.direction.y) - by * (-other.direction.x)) / det
            return CGPoint(x: point.x + direction.x * t, y: point.y + direction.y * t)
        }

        /// Signed distance of `p` from the line (positive on the left of `direction` in a y-down image).
        func offset(of p: CGPoint) -> Double {
            (p.x - point.x) * (-direction.y) + (p.y - point.y) * direction.x
        }
    }

    // MARK: Capacity

    /// Whether an Aztec payload of `bytes` fits the `dataBits` bits of data its symbol holds
    /// (zxing-cpp's `numBits`). A byte no Aztec character table holds (NUL, most controls,
    /// anything above 127) can only come from a binary shift, 8 bits each; any other takes at
    /// least 2.5 (two punctuation characters share a 5-bit code). zxing-cpp 1.4 reads past the
    /// last data bit when the padding after a binary shift looks like another one, and returns
    /// bytes the symbol does not hold; such a payload fails this check.
    static func payloadFits(_ bytes: [UInt8], dataBits: Int) -> Bool {
        guard dataBits > 0 else { return true }
        var binaryOnly = 0
        for b in bytes where !tableBytes.contains(b) { binaryOnly += 1 }
        let otherBits = Double(bytes.count - binaryOnly) * 2.5
        return Double(binaryOnly * 8) + otherBits <= Double(dataBits)
    }

    /// Every byte some Aztec character table (upper, lower, mixed, punctuation, digit) encodes.
    static let tableBytes: Set<UInt8> = {
        var s = Set<UInt8>()
        for c in UInt8(ascii: "A")...UInt8(ascii: "Z") { s.insert(c) }
        for c in UInt8(ascii: "a")...UInt8(ascii: "z") { s.insert(c) }
        for c in UInt8(ascii: "0")...UInt8(ascii: "9") { s.insert(c) }
        for c in Array(" ,.@\\^_`|~!\"#$%&'()*+-/:;<=>?[]{}".utf8) { s.insert(c) }
        for c in UInt8(1)...13 { s.insert(c) }
        for c in UInt8(27)...31 { s.insert(c) }
        s.insert(127)
        return s
    }()
}
