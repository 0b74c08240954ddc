import CVBridge
import Foundation

/// Evidence of QR finder patterns (the three nested squares, 1:1:3:1:1 dark/light/dark/light/dark
/// along any line through their centre), used to decide where to scan and whether the expensive
/// rescue passes are worth running on a frame the first scans read nothing in.
///
/// The image is binarised against its local mean (`localMean`, `cvb_image_above_mean`: dark is at
/// least `offset` levels below the mean of the 31×31 pixels around), then every second row is
/// run-length scanned; a 1:1:3:1:1 window (either polarity, so inverted codes
/// count) is kept only when the vertical and both diagonal lines through its centre show the
/// same pattern at a similar scale. Random texture passes one line often, all four rarely.
/// The run-length scan is most of a code-free frame's cost, hence raw buffers and eight pixels
/// per step (`Tools/Bench/README.md` has the figures).
///
/// The offset keeps flat areas flat: split at the mean itself, sensor noise on a plain wall or
/// sky turns into runs of one or two pixels everywhere, and the scan's cost follows the runs. A
/// finder's dark modules lie far below a mean that mixes them with light ones, so they stay
/// dark. `CodeDetector` uses 6 levels at half and quarter size and 0 at full size, where the
/// finders of codes with modules near 2 px are soft (`Passes.finderThresholdOffset`; a higher
/// full-size offset lost a 2-px-module code beside a larger one,
/// `scanningAroundFindersLosesNoDecode`).
///
/// A bright flat surround lifts the mean near a faint code's edge past its light modules, and
/// its quiet zone and the finders' light rings turn dark; the half-size look's mean therefore
/// counts flat blocks lighter than the texture near them as that texture (`texturedMean`).
///
/// Threading: stateless; call from any thread.
enum FinderEvidence {
    /// A finder-pattern candidate: its centre and module size, in the image's pixels.
    struct Finder {
        var centre: CGPoint
        var module: Double
        /// Whether its centre square is darker than its surroundings (false: a light-on-dark code).
        var dark: Bool
        /// Its module size measured down the column through its centre, when the scan measured
        /// it: a code seen at a steep angle is foreshortened, and so are its finders, so
        /// `module` (along the row) and this differ as the code's sides do.
        var columnModule: Double? = nil
        /// Whether no scanned row matched it within half a module, only within half a pixel
        /// more (`rowSlack`): such a finder is small (modules under 2.5 px) and texture passes
        /// the looser test too, so the scan plan keeps it only as one of a code's three.
        var looseRow = false

        /// This finder in the pixels of an image `factor` times larger.
        func scaled(by factor: Double) -> Finder {
            var f = self
            f.centre = CGPoint(x: centre.x * factor, y: centre.y * factor)
            f.module *= factor
            f.columnModule = columnModule.map { $0 * factor }
            return f
        }
    }

    /// Centres (pixels) of finder-pattern candidates in `gray`, at most `limit`.
    static func candidates(
        _ gray: PixelBuffer, limit: Int = 64, offset: Double = 0
    ) throws(CaptureError) -> [CGPoint] {
        try finders(gray, limit: limit, offset: offset).map(\.centre)
    }

    /// The side of the window the local means average (pixels). 31 covers a whole finder pattern
    /// up to 4-pixel modules; larger modules are seen at half or quarter size.
    static let meanWindow: Int32 = 31

    /// The local mean `finders` compares `gray` with; pass it in to look at several offsets for
    /// the cost of one box filter.
    static func localMean(_ gray: PixelBuffer) throws(CaptureError) -> PixelBuffer {
        try CodeImaging.localMean(gray, block: meanWindow)
    }

    /// `localMean` with flat 8-pixel blocks lighter than the texture near them counted as that
    /// texture (`CodeImaging.texturedMean`, `CodeDetector.Passes.flatBlockRange`); the same
    /// window, so where no such block is near it is `localMean`.
    static func texturedMean(_ gray: PixelBuffer, flatRange: Int32) throws(CaptureError) -> PixelBuffer {
        try CodeImaging.texturedMean(gray, block: 8, window: meanWindow, flatRange: flatRange)
    }

    /// Finder-pattern candidates in `gray` outside the rectangles `ignoring` (pixels), at most
    /// `limit`; `mean` is `localMean(gray)`, computed here when nil. Scans every `rowStep`-th
    /// row; a candidate counts when two scanned rows confirm it (one when `rowStep` > 2).
    static func finders(
        _ gray: PixelBuffer, mean: PixelBuffer? = nil, ignoring: [CGRect] = [], limit: Int = 64, offset: Double = 0,
        rowStep: Int = 2
    ) throws(CaptureError) -> [Finder] {
        try look(gray, mean: mean, ignoring: ignoring, limit: limit, offset: offset, rowStep: rowStep, cues: []).finders
    }

    /// `finders`, and on the same rows the `SymbolCues` of `cues` (none: the QR scan alone),
    /// except those another look notes on some rows (`cuesElsewhere`, see `scan`). The pixels in
    /// `ignoring` and inside `ignoringCodes` (the corners of codes read: `flatSpans`) are flat,
    /// for the cross-checks too. `pixelSlack`:
    /// the cross-checks of patterns up to 17 px allow half a pixel more per ring
    /// (`ratioWithinAPixel`), for the full-size look, where modules are smallest; `rowSlack`:
    /// the row test too, its finders marked `looseRow`.
    static func look(
        _ gray: PixelBuffer, mean: PixelBuffer? = nil, ignoring: [CGRect] = [], ignoringCodes codes: [[CGPoint]] = [],
        limit: Int = 64, offset: Double = 0,
        rowStep: Int = 2, cues kinds: SymbolCues.Kinds, cuesElsewhere: (rows: Int, kinds: SymbolCues.Kinds) = (0, []),
        pixelSlack: Bool = false, rowSlack: Bool = false
    ) throws(CaptureError) -> (finders: [Finder], cues: SymbolCues) {
        let image: PixelBuffer
        if let mean {
            image = try CodeImaging.aboveMean(gray, mean, offset: offset)
        } else {
            image = try CodeImaging.aboveMean(gray, try localMean(gray), offset: offset)
        }
        let w = image.width, h = image.height, stride = image.bytesPerRow
        // Ignored rectangles become flat: no run, no candidate there.
        for r in ignoring {
            let c = r.intersection(CGRect(x: 0, y: 0, width: w, height: h))
            guard !c.isNull, c.width >= 1, c.height >= 1 else { continue }
            let x0 = Int(c.minX), x1 = Int(c.maxX), y0 = Int(c.minY), y1 = Int(c.maxY)
            for y in y0..<y1 { memset(image.baseAddress + y * stride + x0, 0, x1 - x0) }
        }
        if !codes.isEmpty {
            for y in 0..<h {
                for span in flatSpans(codes, y: y, width: w) { memset(image.baseAddress + y * stride + span.lowerBound, 0, span.count) }
            }
        }
        return withExtendedLifetime(image) {
            var cues = SymbolCues()
            let finders = scan(
                Thresholded(image), limit: limit, rowStep: rowStep, cues: kinds, cuesElsewhere: cuesElsewhere, into: &cues,
                pixelSlack: pixelSlack, rowSlack: rowSlack)
            return (finders, cues)
        }
    }

    /// What `finders(gray, mean:, offset:, rowStep:)` returns, without thresholding the whole
    /// image: only the scanned rows and the pixels the cross-checks visit are compared with
    /// `mean`. For sparse looks (`rowStep` 4) that skips three quarters of the comparisons and
    /// the frame-sized buffer they fill.
    static func findersInScannedRows(
        _ gray: PixelBuffer, mean: PixelBuffer, limit: Int = 64, offset: Double = 0, rowStep: Int
    ) throws(CaptureError) -> [Finder] {
        try lookInScannedRows(gray, mean: mean, limit: limit, offset: offset, rowStep: rowStep, cues: []).finders
    }

    /// `findersInScannedRows`, and on the same rows the `SymbolCues` of `cues`; the scanned rows
    /// are flat inside `ignoringCodes` (see `flatSpans`).
    static func lookInScannedRows(
        _ gray: PixelBuffer, mean: PixelBuffer, ignoringCodes codes: [[CGPoint]] = [], limit: Int = 64, offset: Double = 0,
        rowStep: Int, cues kinds: SymbolCues.Kinds
    ) throws(CaptureError) -> (finders: [Finder], cues: SymbolCues) {
        guard gray.pixelFormat == .gray, mean.pixelFormat == .gray, gray.width == mean.width,
            gray.height == mean.height
        else {
            throw CaptureError(
                .conversionFailed, "comparing an image with its local mean failed: comparisons take GRAY images of one size")
        }
        return withExtendedLifetime((gray, mean)) {
            let binary = ThresholdedOnDemand(gray, mean: mean, offset: offset, flat: codes)
            defer { binary.release() }
            var cues = SymbolCues()
            let finders = scan(binary, limit: limit, rowStep: rowStep, cues: kinds, into: &cues)
            return (finders, cues)
        }
    }

    /// The columns of row `y` (of an image `width` wide) whose pixel centres lie inside each of
    /// `polygons` (convex, either winding; pixels; fewer than three corners outline nothing), one
    /// range per polygon crossing the row. The looks taken after a code was read leave its pixels
    /// flat: its modules make finder-like runs and `SymbolCues` of their own, which cost the scan
    /// and could never open a read.
    static func flatSpans(_ polygons: [[CGPoint]], y: Int, width: Int) -> [Range<Int>] {
        let yc = Double(y) + 0.5
        var spans: [Range<Int>] = []
        for corners in polygons where corners.count >= 3 {
            var lo = Double.infinity, hi = -Double.infinity
            for i in corners.indices {
                let a = corners[i], b = corners[(i + 1) % corners.count]
                guard (a.y <= yc && b.y >= yc) || (b.y <= yc && a.y >= yc), a.y != b.y else { continue }
                let x = a.x + (yc - a.y) * (b.x - a.x) / (b.y - a.y)
                lo = min(lo, x)
                hi = max(hi, x)
            }
            // Clamped before conversion: a corner mapped back from a steep warp may lie far outside.
            guard lo.isFinite, hi.isFinite else { continue }
            lo = max(lo, -1)
            hi = min(hi, Double(width) + 1)
            guard hi >= lo else { continue }
            let x0 = max(0, Int((lo - 0.5).rounded(.up))), x1 = min(width, Int((hi - 0.5).rounded(.down)) + 1)
            if x1 > x0 { spans.append(x0..<x1) }
        }
        return spans
    }

    /// The row-by-row search behind `finders` and `findersInScannedRows`.
    static func scan<Binary: FinderBinaryImage>(_ binary: Binary, limit: Int, rowStep: Int) -> [Finder] {
        var cues = SymbolCues()
        return scan(binary, limit: limit, rowStep: rowStep, cues: [], into: &cues)
    }

    /// `scan`, noting the `SymbolCues` of `kinds` from the same run lengths; with
    /// `cuesElsewhere.rows` > 0, those of `cuesElsewhere.kinds` not on the rows `y` with
    /// `(y - 1) % cuesElsewhere.rows == 0`: the rows of another look at this size that notes
    /// them (scans start at row 1).
    static func scan<Binary: FinderBinaryImage>(
        _ binary: Binary, limit: Int, rowStep: Int, cues kinds: SymbolCues.Kinds,
        cuesElsewhere: (rows: Int, kinds: SymbolCues.Kinds) = (0, []), into cues: inout SymbolCues, pixelSlack: Bool = false,
        rowSlack: Bool = false
    ) -> [Finder] {
        let elsewhereRowKinds = kinds.subtracting(cuesElsewhere.kinds)
        let w = binary.width, h = binary.height
        var out: [Finder] = []
        var rows: [Int] = []  // scanned rows that confirmed each candidate
        var loose: [(Int, Int, Int)] = []  // row matches only within `ratioWithinAPixel`: centre x, y, length
        // Where each run of one row starts, and the row's end after the last (a raw buffer: this
        // loop visits every pixel of every scanned row, and Array bounds checks cost a third of it).
        let starts = UnsafeMutablePointer<Int>.allocate(capacity: w &+ 2)
        defer { starts.deallocate() }
        var y = 1
        while y < h - 1 && out.count < limit * 4 {
            let row = binary.row(y)
            starts[0] = 0
            var n = 1  // runs begun so far
            // Eight pixels at a time: XOR with the same word shifted by one pixel marks each
            // pixel that differs from its left neighbour (pixels are 0 or 255, so whole bytes);
            // one bit per byte is kept, so each change clears with `changes & (changes - 1)`.
            var x = 0
            var left = UInt64(row[0])
            let raw = UnsafeRawPointer(row)
            while x &+ 8 <= w {
                let word = raw.loadUnaligned(fromByteOffset: x, as: UInt64.self)
                var changes = (word ^ ((word << 8) | left)) & 0x8080_8080_8080_8080
                left = word >> 56
                while changes != 0 {
                    starts[n] = x &+ (changes.trailingZeroBitCount &>> 3)
                    n &+= 1
                    changes &= changes &- 1
                }
                x &+= 8
            }
            while x < w {
                if UInt64(row[x]) != left {
                    starts[n] = x
                    n &+= 1
                    left = UInt64(row[x])
                }
                x &+= 1
            }
            starts[n] = w
            let rowKinds = cuesElsewhere.rows > 0 && (y &- 1) % cuesElsewhere.rows == 0 ? elsewhereRowKinds : kinds
            if !rowKinds.isEmpty {
                SymbolCues.scanRow(binary, y: y, starts: starts, runs: n, firstDark: row[0] == 0, kinds: rowKinds, into: &cues)
            }
            var i = 0
            while i &+ 4 < n {
                let s0 = starts[i], s1 = starts[i &+ 1], s2 = starts[i &+ 2]
                let s3 = starts[i &+ 3], s4 = starts[i &+ 4], s5 = starts[i &+ 5]
                let r = (s1 &- s0, s2 &- s1, s3 &- s2, s4 &- s3, s5 &- s4)
                if !ratioOK(r.0, r.1, r.2, r.3, r.4) {
                    // Kept for later: cross-checked only where no code is placed (see below).
                    // Only patterns of 10–17 px: longer ones get no more room than `ratioOK`'s.
                    if rowSlack && r.2 > r.1 && r.2 > r.3 {
                        let total = r.0 &+ r.1 &+ r.2 &+ r.3 &+ r.4
                        if total <= 17 && total >= 10 && loose.count < 8192 && ratioWithinAPixel(r.0, r.1, r.2, r.3, r.4) {
                            loose.append((s2 &+ r.2 / 2, y, total))
                        }
                    }
                } else {
                    let cx = s2 + r.2 / 2
                    let total = r.0 + r.1 + r.2 + r.3 + r.4
                    if let column = crossCheckedLength(binary, cx, y, 0, 1, total, pixelSlack: pixelSlack),
                        crossCheckedLength(binary, cx, y, 1, 1, total, pixelSlack: pixelSlack) != nil,
                        crossCheckedLength(binary, cx, y, 1, -1, total, pixelSlack: pixelSlack) != nil
                    {
                        let c = CGPoint(x: cx, y: y)
                        if let k = out.firstIndex(where: {
                            abs($0.centre.x - c.x) < Double(total) / 2 && abs($0.centre.y - c.y) < Double(total) / 2
                        }) {
                            rows[k] += 1
                        } else {
                            out.append(
                                Finder(
                                    centre: c, module: Double(total) / 7, dark: binary.pixel(cx, y) == 0,
                                    columnModule: Double(column) / 7))
                            rows.append(1)
                        }
                        i &+= 2
                    }
                }
                i &+= 1
            }
            y += max(rowStep, 1)
        }
        // A real finder's centre square (≥ 4.5 px tall) crosses at least two scanned rows;
        // texture rarely repeats a four-line match on the next row (noise frames went from up
        // to 5 single-row candidates per 1280x720 frame to none).
        let minimumRows = rowStep > 2 ? 1 : 2
        let found = zip(out, rows).filter { $0.1 >= minimumRows }.map(\.0)
        guard !loose.isEmpty else { return found }
        return found + looseFinders(loose, binary, strict: &out, rows: &rows, found: found, minimumRows: minimumRows)
    }

    /// The looser row matches of `scan` (centre x, y, length), cross-checked only outside the
    /// codes the strict finders `found` place: inside one, a code's own 2-px modules pass the
    /// looser test everywhere, and a finder found there would only add triples of the same code.
    /// A match beside a strict candidate of one row adds a row to it (a finder matched
    /// strictly on one row and loosely on the next); what that confirms is returned with the
    /// loose finders (`looseRow`) confirmed on `minimumRows` rows of their own.
    private static func looseFinders<Binary: FinderBinaryImage>(
        _ loose: [(Int, Int, Int)], _ binary: Binary, strict out: inout [Finder], rows: inout [Int], found: [Finder],
        minimumRows: Int
    ) -> [Finder] {
        let placed = ScanRun.triples(found).map(ScanRun.codeArea)
        var looseOut: [Finder] = []
        var looseRows: [Int] = []
        for (cx, y, total) in loose {
            let c = CGPoint(x: cx, y: y)
            guard !placed.contains(where: { $0.contains(c) }),
                let column = crossCheckedLength(binary, cx, y, 0, 1, total, pixelSlack: true),
                crossCheckedLength(binary, cx, y, 1, 1, total, pixelSlack: true) != nil,
                crossCheckedLength(binary, cx, y, 1, -1, total, pixelSlack: true) != nil
            else { continue }
            let near = { (f: Finder) in abs(f.centre.x - c.x) < Double(total) / 2 && abs(f.centre.y - c.y) < Double(total) / 2 }
            if let k = out.firstIndex(where: near) {
                rows[k] += 1
            } else if let k = looseOut.firstIndex(where: near) {
                looseRows[k] += 1
            } else {
                looseOut.append(
                    Finder(
                        centre: c, module: Double(total) / 7, dark: binary.pixel(cx, y) == 0,
                        columnModule: Double(column) / 7, looseRow: true))
                looseRows.append(1)
            }
        }
        // Strict candidates that the looser matches confirmed (they were one row short).
        let confirmed = zip(out, rows).filter { f, n in
            n >= minimumRows && !found.contains { $0.centre == f.centre }
        }.map { f, _ in
            var f = f
            f.looseRow = true
            return f
        }
        return confirmed + zip(looseOut, looseRows).filter { $0.1 >= minimumRows }.map(\.0)
    }

    /// Whether five run lengths are 1:1:3:1:1 within half a module (modules ≥ 1.5 px).
    @inline(__always)
    static func ratioOK(_ a: Int, _ b: Int, _ c: Int, _ d: Int, _ e: Int) -> Bool {
        // The centre run (three modules) is longer than any one-module run that passes, so its
        // neighbours reject most windows before any multiplication. Run lengths are at most an
        // image's width: no overflow, so no checked arithmetic in the hottest loop.
        guard c > b, c > d else { return false }
        let total = a &+ b &+ c &+ d &+ e
        guard total >= 10 else { return false }
        // |x − u| < u/2 with u = total/7, in integers: total < 14x < 3·total (9·total for c).
        let t3 = 3 &* total
        func one(_ x: Int) -> Bool { let x14 = 14 &* x; return x14 > total && x14 < t3 }
        let c14 = 14 &* c
        return one(a) && one(b) && one(d) && one(e) && c14 > t3 && c14 < 9 &* total
    }

    /// The 1:1:3:1:1 test along direction (dx, dy) through (cx, cy), at a scale within 2× of
    /// `expected` (diagonals measure up to √2 longer in pixels steps, which the 2× allows).
    static func crossCheck<Binary: FinderBinaryImage>(
        _ binary: Binary, _ cx: Int, _ cy: Int, _ dx: Int, _ dy: Int, _ expected: Int
    ) -> Bool {
        crossCheckedLength(binary, cx, cy, dx, dy, expected) != nil
    }

    /// `crossCheck`, returning the pattern's length in steps along (dx, dy) when it passes;
    /// `pixelSlack`: `ratioWithinAPixel` rather than `ratioOK`.
    static func crossCheckedLength<Binary: FinderBinaryImage>(
        _ binary: Binary, _ cx: Int, _ cy: Int, _ dx: Int, _ dy: Int, _ expected: Int, pixelSlack: Bool = false
    ) -> Int? {
        let w = binary.width, h = binary.height
        let centre = binary.pixel(cx, cy)
        let maxRun = expected * 2
        // Walks from the centre in one direction: lengths of the centre run, the light (or
        // dark) ring and the outer ring.
        func walk(_ sx: Int, _ sy: Int) -> (Int, Int, Int)? {
            var x = cx, y = cy
            var counts = (0, 0, 0)  // a tuple, not an Array: no allocation per walk
            var state = 0
            var colour = centre
            while state < 3 {
                guard x >= 0, y >= 0, x < w, y < h else { return state == 2 && counts.2 > 0 ? counts : nil }
                let v = binary.pixel(x, y)
                if v != colour {
                    state += 1
                    colour = v
                    if state == 3 { break }
                }
                let n: Int
                switch state {
                case 0: counts.0 += 1; n = counts.0
                case 1: counts.1 += 1; n = counts.1
                default: counts.2 += 1; n = counts.2
                }
                if n > maxRun { return nil }
                x += sx
                y += sy
            }
            return counts
        }
        guard let a = walk(dx, dy), let b = walk(-dx, -dy) else { return nil }
        let total = a.2 + a.1 + a.0 + b.0 - 1 + b.1 + b.2
        guard total * 2 >= expected, total <= expected * 2 else { return nil }
        let (r0, r1, r2, r3, r4) = (a.2, a.1, a.0 + b.0 - 1, b.1, b.2)
        return (pixelSlack ? ratioWithinAPixel(r0, r1, r2, r3, r4) : ratioOK(r0, r1, r2, r3, r4)) ? total : nil
    }

    /// `ratioOK` with half a pixel more room for each one-module run when the pattern is at most
    /// 17 px long (modules under 2.5 px): across a finder of 2-px modules (a version 40 code at
    /// 640x480, the far side of a steeply seen one) a ring is 1–3 px after sampling and
    /// thresholding, and half a module is no room at all. Only the full-size look's cross-checks
    /// use it, after a row matched exactly; longer patterns, and the half- and quarter-size
    /// looks, keep `ratioOK` (there a blurred code's finders passed too, and the frames whose
    /// code no pass reads then ran every rescue).
    static func ratioWithinAPixel(_ a: Int, _ b: Int, _ c: Int, _ d: Int, _ e: Int) -> Bool {
        guard c > b, c > d else { return false }
        let total = a + b + c + d + e
        guard total >= 10 else { return false }
        if total > 17 { return ratioOK(a, b, c, d, e) }
        // |x − u| < u/2 + 1/2 with u = total/7: total − 7 < 14x < 3·total + 7.
        func one(_ x: Int) -> Bool { let x14 = 14 * x; return x14 > total - 7 && x14 < 3 * total + 7 }
        let c14 = 14 * c
        return one(a) && one(b) && one(d) && one(e) && c14 > 3 * total && c14 < 9 * total
    }
}

/// A two-level image `FinderEvidence.scan` reads: 0 (dark) or 255 (light) per pixel.
protocol FinderBinaryImage {
    var width: Int { get }
    var height: Int { get }
    /// Row `y`, `width` bytes; valid until the next call.
    func row(_ y: Int) -> UnsafePointer<UInt8>
    func pixel(_ x: Int, _ y: Int) -> UInt8
}

/// A thresholded image held in a `PixelBuffer` the caller keeps alive.
struct Thresholded: FinderBinaryImage {
    let width: Int, height: Int
    private let base: UnsafePointer<UInt8>, stride: Int

    init(_ image: PixelBuffer) {
        width = image.width
        height = image.height
        stride = image.bytesPerRow
        base = UnsafePointer(image.baseAddress.assumingMemoryBound(to: UInt8.self))
    }

    func row(_ y: Int) -> UnsafePointer<UInt8> { base + y * stride }

    @inline(__always) func pixel(_ x: Int, _ y: Int) -> UInt8 { base[y * stride + x] }
}

/// `cvb_image_above_mean`'s rule (light: above the local mean minus the offset, which saturates
/// at 0; the offset rounded to whole levels, none when ≤ 0) applied to one pixel or row when asked.
/// The caller keeps `gray` and `mean` alive and calls `release()`.
struct ThresholdedOnDemand: FinderBinaryImage {
    let width: Int, height: Int
    private let gray: UnsafePointer<UInt8>, mean: UnsafePointer<UInt8>
    private let grayStride: Int, meanStride: Int
    private let offset: UInt8
    private let scratch: UnsafeMutablePointer<UInt8>
    /// Codes whose pixels `row` returns flat (`FinderEvidence.flatSpans`); `pixel` does not
    /// blank them: a cross-check reaching into a code sees its modules (no candidate starts
    /// there, its rows having no runs).
    private let flat: [[CGPoint]]

    init(_ gray: PixelBuffer, mean: PixelBuffer, offset: Double, flat: [[CGPoint]] = []) {
        self.flat = flat
        width = gray.width
        height = gray.height
        self.gray = UnsafePointer(gray.baseAddress.assumingMemoryBound(to: UInt8.self))
        self.mean = UnsafePointer(mean.baseAddress.assumingMemoryBound(to: UInt8.self))
        grayStride = gray.bytesPerRow
        meanStride = mean.bytesPerRow
        self.offset = offset > 0 ? UInt8(min(offset.rounded(.toNearestOrEven), 255)) : 0
        scratch = .allocate(capacity: max(gray.width, 1))
    }

    func release() { scratch.deallocate() }

    func row(_ y: Int) -> UnsafePointer<UInt8> {
        let g = gray + y * grayStride, m = mean + y * meanStride
        let off = offset
        for x in 0..<width {
            let t = m[x] > off ? m[x] &- off : 0
            scratch[x] = g[x] > t ? 255 : 0
        }
        if !flat.isEmpty {
            for span in FinderEvidence.flatSpans(flat, y: y, width: width) { memset(scratch + span.lowerBound, 0, span.count) }
        }
        return UnsafePointer(scratch)
    }

    @inline(__always) func pixel(_ x: Int, _ y: Int) -> UInt8 {
        let m = mean[y * meanStride + x]
        let t = m > offset ? m &- offset : 0
        return gray[y * grayStride + x] > t ? 255 : 0
    }
}
