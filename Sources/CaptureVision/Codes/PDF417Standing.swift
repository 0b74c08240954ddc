import Foundation

extension SymbolCues {
    /// A PDF417 symbol standing on its end (turned about 90°): its start and stop patterns lie
    /// along the rows, and a row inside one of their bars crosses it as one long dark run (the
    /// symbol's height). Down the columns through such a run the pattern's widths appear
    /// (`pdf417Patterns`, either way round); three columns across the run, each matching the same
    /// pattern with its widest bar on that run, make a cue. A long dark run in a photo (a dark
    /// object, a shadow) ends the column walk at its first or second change.
    ///
    /// At most `standingWalkLimit` runs are walked per look; a run inside the column extent
    /// walked for an earlier one is not walked again (the rows a few pixels apart cross one bar
    /// or one dark object many times).
    static let standingWalkLimit = 12

    /// The shortest dark run (pixels) walked for a standing PDF417 pattern: a symbol of three
    /// rows three modules high at 2 px per module is 18 px.
    static let standingRunMinimum = 18

    /// Notes the cue of a standing PDF417 pattern when the dark run `x0..<x1` of row `y` is the
    /// widest bar of one (see above).
    @inline(never)
    mutating func walkStanding<Binary: FinderBinaryImage>(_ binary: Binary, x0: Int, x1: Int, y: Int) {
        let middle = (x0 + x1) / 2
        for r in standingWalked where r.contains(CGPoint(x: Double(middle) + 0.5, y: Double(y) + 0.5)) { return }
        let length = x1 - x0
        var bars: [(pattern: Int, centre: Double, top: Int, bottom: Int)] = []
        for x in [x0 + length / 4, middle, x1 - 1 - length / 4] {
            guard let bar = Self.standingPattern(binary, x: x, y: y) else { break }
            if let first = bars.first, bar.pattern != first.pattern || abs(bar.centre - first.centre) > Double(first.bottom - first.top) / 2 {
                break
            }
            bars.append(bar)
        }
        // The walked extent: the bar's rows when the first column found one, else the dark run
        // down the middle column.
        let extent = bars.first.map { ($0.top, $0.bottom) } ?? Self.darkExtent(binary, x: middle, y: y)
        standingWalked.append(
            CGRect(x: Double(x0), y: Double(extent.0), width: Double(length), height: Double(extent.1 - extent.0 + 1)))
        guard bars.count == 3 else { return }
        let centre = CGPoint(x: Double(middle), y: bars.map(\.centre).reduce(0, +) / 3)
        guard !pdf417.contains(where: { abs($0.x - centre.x) < Double(4 * length) && abs($0.y - centre.y) < Double(4 * length) })
        else { return }
        pdf417.append(centre)
        standingPDF417.append(centre)
    }

    /// The rows of the dark run down column `x` through row `y`, at most `standingBarLimit`
    /// rows each way (a dark object is not followed to its end).
    static func darkExtent<Binary: FinderBinaryImage>(_ binary: Binary, x: Int, y: Int) -> (Int, Int) {
        var top = y, bottom = y
        while top > 0, y - top < standingBarLimit, binary.pixel(x, top - 1) == 0 { top -= 1 }
        while bottom < binary.height - 1, bottom - y < standingBarLimit, binary.pixel(x, bottom + 1) == 0 { bottom += 1 }
        return (top, bottom)
    }

    /// The widest bar (pixels) of a standing pattern this look reads: 8 modules of 8 px, as
    /// the finder looks' modules; larger ones are the half- or quarter-size look's.
    static let standingBarLimit = 64

    /// The PDF417 start or stop pattern down column `x` whose widest bar is the dark run through
    /// row `y`: which of `pdf417Patterns` (read top to bottom), the bar's middle row and its rows.
    static func standingPattern<Binary: FinderBinaryImage>(_ binary: Binary, x: Int, y: Int)
        -> (pattern: Int, centre: Double, top: Int, bottom: Int)?
    {
        guard x >= 0, x < binary.width, y >= 0, y < binary.height, binary.pixel(x, y) == 0 else { return nil }
        let (top, bottom) = darkExtent(binary, x: x, y: y)
        let bar = bottom - top + 1
        // The widest bar is 7 or 8 modules of at least 1.5 px, and the pattern spans 17.
        guard bar >= 10, bar < standingBarLimit else { return nil }
        let reach = bar * 17 / 6
        // Runs above the bar (nearest first) and below it, at most eight each way.
        func runs(from start: Int, step: Int) -> [Int] {
            var out: [Int] = []
            var yy = start, colour = binary.pixel(x, start), count = 0
            while out.count < 8, abs(yy - start) <= reach {
                let next = yy + step
                guard next >= 0, next < binary.height else {
                    out.append(count + 1)
                    break
                }
                count += 1
                let v = binary.pixel(x, next)
                if v != colour {
                    out.append(count)
                    // The first run beside the bar is one module: a dark object's light
                    // surround is longer than a third of the bar.
                    if out.count == 1 && 3 * count > bar { return out }
                    count = 0
                    colour = v
                }
                yy = next
            }
            return out
        }
        let above = top > 0 ? runs(from: top - 1, step: -1) : []
        let below = bottom < binary.height - 1 ? runs(from: bottom + 1, step: 1) : []
        let column = above.reversed() + [bar] + below
        let barIndex = above.count
        for (p, pattern) in pdf417Patterns.enumerated() {
            let k = barIndex - pattern.bar
            guard k >= 0, k + pattern.widths.count <= column.count else { continue }
            if matches(pattern, from: k, { column[$0] }) != nil {
                return (p, Double(top + bottom) / 2, top, bottom)
            }
        }
        return nil
    }
}
