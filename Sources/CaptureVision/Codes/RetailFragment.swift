import Foundation

/// Whether a short EAN/UPC read (UPC-E, EAN-8) is part of a longer symbol: bars continue
/// where its quiet zone should be.
///
/// ZBar decodes a UPC-E or EAN-8 from part of a UPC-A or EAN-13 whose other part a scan line
/// crossed badly (a recompressed photo, a glare); the digits then satisfy the short symbol's
/// check digit and name no product. Every EAN/UPC symbol has a quiet zone of at least 7 modules
/// on each side. ZBar's points lie on the scan lines that decoded the read, at the symbol's end
/// in each line's direction: where they give both ends, the module is the span over the
/// symbol's modules, and the zone from 1.5 to 8 modules beyond each end is looked at (any 7
/// modules of a symbol's data hold two bars; an add-on 7 or more modules away shows at most
/// its first bar there); where
/// they give one end, both sides of it are (one must be the quiet zone). A zone holds bars when
/// it crosses two or more dark runs deeper than a quarter of the symbol's contrast (the
/// fine bars beyond a fragment's end in a recompressed photo can be that faint). A read is a
/// fragment when two thirds of its lines (at most `linesChecked`) show bars there: the digits
/// printed beside a UPC symbol reach only its lowest lines.
///
/// Threading: stateless; call from any thread.
enum RetailFragment {
    /// At most this many of the read's scan lines are looked at.
    static let linesChecked = 6

    /// The modules of `type`'s symbol, guards included; nil for types this check leaves alone.
    static func modules(of type: MetadataObjectType) -> Int? {
        switch type {
        case .upce: return 51  // guards 3 + 6, six digits of 7
        case .ean8: return 67  // guards 3 + 5 + 3, eight digits of 7
        default: return nil
        }
    }

    /// Whether `symbol` (a ZBar read) lies inside a longer run of bars in `gray`.
    static func isFragment(_ symbol: ScannedSymbol, in gray: PixelBuffer) -> Bool {
        guard let modules = modules(of: symbol.type), gray.pixelFormat == .gray, !symbol.points.isEmpty,
            symbol.points.allSatisfy({ $0.x.isFinite && $0.y.isFinite })
        else { return false }
        // ZBar's orientation 1 and 3: read top to bottom or bottom to top (scan lines are columns).
        let alongColumns = symbol.orientation == 1 || symbol.orientation == 3
        let along = symbol.points.map { Int((alongColumns ? $0.y : $0.x).rounded()) }
        let across = symbol.points.map { Int((alongColumns ? $0.x : $0.y).rounded()) }
        let lo = along.min()!, hi = along.max()!
        // Both ends when the points lie at two places a symbol's length apart (20 px: 51 modules of 0.4 px).
        let ends = hi - lo >= 20 ? [lo, hi] : [(lo + hi) / 2]
        let module = ends.count == 2 ? Double(hi - lo) / Double(modules) : nil
        let step = max(1, symbol.points.count / linesChecked)
        var fragments = 0, lines = 0
        withExtendedLifetime(gray) {
            let base = gray.baseAddress.assumingMemoryBound(to: UInt8.self)
            let length = alongColumns ? gray.height : gray.width
            for k in stride(from: 0, to: symbol.points.count, by: step).prefix(linesChecked) {
                let c = across[k]
                guard c >= 0, c < (alongColumns ? gray.width : gray.height) else { continue }
                let line: [Int] =
                    alongColumns
                    ? (0..<length).map { Int(base[$0 * gray.bytesPerRow + c]) }
                    : (0..<length).map { Int(base[c * gray.bytesPerRow + $0]) }
                lines += 1
                if barsBeyond(line, ends: ends, module: module) { fragments += 1 }
            }
        }
        return lines > 0 && 3 * fragments >= 2 * lines
    }

    /// Whether `line` holds bars where the quiet zone beyond `ends` should be: with two ends
    /// (and the `module` they give), beyond either; with one, on both its sides (the module
    /// then the narrowest quartile of the runs around it).
    static func barsBeyond(_ line: [Int], ends: [Int], module: Double?) -> Bool {
        let n = line.count
        if ends.count == 2, let module {
            let a = ends[0], b = ends[1]
            guard a >= 0, b < n, b > a else { return false }
            let contrast = spread(line, a, b + 1)
            return darkRuns(line, in: zone(a, -1, module, n), contrast: contrast) >= 2
                || darkRuns(line, in: zone(b, 1, module, n), contrast: contrast) >= 2
        }
        guard let x = ends.first, x >= 0, x < n else { return false }
        let window = (max(0, x - 80), min(n, x + 81))
        let contrast = spread(line, window.0, window.1)
        guard contrast > 0, let module = narrowRun(line, window.0, window.1) else { return false }
        return darkRuns(line, in: zone(x, -1, module, n), contrast: contrast) >= 2
            && darkRuns(line, in: zone(x, 1, module, n), contrast: contrast) >= 2
    }

    /// The pixels from 1.5 to 8 modules beyond `x` toward `side`, clipped to the line.
    static func zone(_ x: Int, _ side: Int, _ module: Double, _ n: Int) -> Range<Int> {
        let near = x + side * Int((1.5 * module).rounded(.up)), far = x + side * Int((8 * module).rounded(.up))
        let a = max(0, min(near, far)), b = min(n, max(near, far) + 1)
        return a < b ? a..<b : 0..<0
    }

    /// The 95th less the 5th percentile of `line[a..<b]`.
    static func spread(_ line: [Int], _ a: Int, _ b: Int) -> Int {
        guard b - a >= 4 else { return 0 }
        let v = line[a..<b].sorted()
        return v[v.count * 95 / 100] - v[v.count * 5 / 100]
    }

    /// Dark runs in `range`: pixels below the range's brightest by more than a quarter of
    /// `contrast`, one run per stretch (3-pixel means: one noisy pixel is no bar).
    static func darkRuns(_ line: [Int], in range: Range<Int>, contrast: Int) -> Int {
        guard range.count >= 3, contrast > 0 else { return 0 }
        let smooth = range.map { i in (line[max(0, i - 1)] + line[i] + line[min(line.count - 1, i + 1)]) / 3 }
        let top = smooth.max()!
        var runs = 0, inRun = false
        for v in smooth {
            let dark = 4 * (top - v) > contrast
            if dark && !inRun { runs += 1 }
            inRun = dark
        }
        return runs
    }

    /// The first quartile of the run widths of `line[a..<b]` thresholded at its mid-level: about
    /// one module where a barcode's bars cross it; nil with fewer than 8 runs.
    static func narrowRun(_ line: [Int], _ a: Int, _ b: Int) -> Double? {
        guard b - a >= 8 else { return nil }
        let mid = (line[a..<b].min()! + line[a..<b].max()!) / 2
        var widths: [Int] = [], start = a
        for i in (a + 1)..<b where (line[i] < mid) != (line[i - 1] < mid) {
            widths.append(i - start)
            start = i
        }
        guard widths.count >= 8 else { return nil }
        widths.sort()
        return Double(max(1, widths[widths.count / 4]))
    }
}
