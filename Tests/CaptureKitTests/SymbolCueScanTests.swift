import Foundation
import Testing

@_spi(Benchmark) @testable import CaptureVision
import CaptureKitTesting

/// `SymbolCues.scanRow`'s single pass over a row's runs against the plain one it replaced (every
/// window of every kind tested in turn): the same cues in the same order, on random rows built to
/// hold ladders, PDF417 patterns and texture, and on thresholded frames with real symbols.
@Suite struct SymbolCueScanTests {
    /// The scan as it was: every Aztec window centred on a dark run, every window of each PDF417
    /// pattern, every Data Matrix window, each kind in turn.
    static func referenceScanRow<Binary: FinderBinaryImage>(
        _ binary: Binary, y: Int, starts: UnsafeMutablePointer<Int>, runs n: Int, kinds: SymbolCues.Kinds,
        into cues: inout SymbolCues
    ) {
        guard n >= 7 else { return }
        let firstDark = binary.pixel(0, y) == 0
        func dark(_ k: Int) -> Bool { (k & 1 == 0) == firstDark }
        func len(_ k: Int) -> Int { starts[k + 1] - starts[k] }
        let limit = SymbolCues.limit
        if kinds.contains(.aztec) && cues.bullseyes.count < limit && n >= 9 {
            var k = dark(4) ? 0 : 1
            while k + 9 <= n {
                let c = k + 4
                if let inner = SymbolCues.equalRuns(7, from: k + 1, len), 14 * len(k) >= inner, 14 * len(k + 8) >= inner {
                    let total = inner * 9 / 7
                    let cx = starts[c] + len(c) / 2
                    if !cues.bullseyes.contains(where: { abs(Int($0.centre.x) - cx) < total / 2 && abs(Int($0.centre.y) - y) < total / 2 }),
                        SymbolCues.ringCheck(binary, cx, y, 0, 1, total), SymbolCues.ringCheck(binary, cx, y, 1, 1, total),
                        SymbolCues.ringCheck(binary, cx, y, 1, -1, total)
                    {
                        cues.bullseyes.append(FinderEvidence.Finder(centre: CGPoint(x: cx, y: y), module: Double(total) / 9, dark: true))
                        if cues.bullseyes.count >= limit { break }
                    }
                }
                k += 2
            }
        }
        if kinds.contains(.pdf417) && cues.pdf417.count < limit && cues.pdf417Hits.count < 16 * limit && n >= 8 {
            for (p, pattern) in SymbolCues.pdf417Patterns.enumerated() {
                var k = dark(0) == pattern.firstDark ? 0 : 1
                while k + pattern.widths.count <= n {
                    if 3 * len(k + pattern.bar) >= 10 * len(k + pattern.beside), let bar = SymbolCues.matches(pattern, from: k, len) {
                        let wide = k + bar
                        cues.addPDF417Hit(SymbolCues.PatternHit(x: starts[wide] + len(wide) / 2, y: y, width: len(wide), pattern: p))
                    }
                    k += 2
                }
            }
        }
        if kinds.contains(.dataMatrix) && cues.dataMatrix.count < limit && n >= 10 {
            var k = 0
            while k + 10 <= n {
                guard SymbolCues.equalRuns(10, from: k, len) != nil else {
                    k += 1
                    continue
                }
                var end = k + 10
                let total10 = starts[end] - starts[k]
                while end < n, 10 * len(end) * 10 >= total10 * 6, 10 * len(end) * 10 <= total10 * 15 { end += 1 }
                let x0 = starts[k], x1 = starts[end]
                let module = Double(x1 - x0) / Double(end - k)
                let mid = { (r: Int) in starts[r] + len(r) / 2 }
                if let side = SymbolCues.quietAlongside(binary, x0, x1, y, module),
                    (dark(k) && SymbolCues.solidEdge(binary, mid(k), y, side, module)
                        && !SymbolCues.solidEdge(binary, mid(k + 2), y, side, module))
                        || (dark(end - 1) && SymbolCues.solidEdge(binary, mid(end - 1), y, side, module)
                            && !SymbolCues.solidEdge(binary, mid(end - 3), y, side, module))
                {
                    cues.dataMatrix.append(CGRect(x: x0, y: y, width: x1 - x0, height: 0))
                    if cues.dataMatrix.count >= limit { break }
                }
                k = end
            }
        }
    }

    /// Everything a scan noted, comparable.
    static func summary(_ c: SymbolCues) -> [String] {
        c.bullseyes.map { "aztec \($0.centre) \($0.module)" } + c.pdf417.map { "pdf417 \($0)" }
            + c.pdf417Hits.map { "hit \($0.x),\($0.y) \($0.width) \($0.pattern)" } + c.dataMatrix.map { "dm \($0)" }
    }

    /// Both scans over every row of `binary`, each keeping its own cues from row to row (limits
    /// and the PDF417 rows that confirm one another depend on the rows before).
    static func compareOnEveryRow(_ binary: Thresholded, kinds: SymbolCues.Kinds) -> (old: SymbolCues, new: SymbolCues) {
        let starts = UnsafeMutablePointer<Int>.allocate(capacity: binary.width + 2)
        defer { starts.deallocate() }
        var old = SymbolCues(), new = SymbolCues()
        for y in 0..<binary.height {
            let row = binary.row(y)
            starts[0] = 0
            var n = 1
            for x in 1..<binary.width where row[x] != row[x - 1] {
                starts[n] = x
                n += 1
            }
            starts[n] = binary.width
            referenceScanRow(binary, y: y, starts: starts, runs: n, kinds: kinds, into: &old)
            SymbolCues.scanRow(binary, y: y, starts: starts, runs: n, kinds: kinds, into: &new)
        }
        return (old, new)
    }

    /// A binary image whose rows are random runs: texture (1–4 px), ladders of equal runs with
    /// some jitter, PDF417 start and stop patterns at 1–3 px per module, long runs; each row
    /// repeated 1–6 times (symbols repeat rows), some rows a copy of an earlier one shifted.
    static func randomRuns(width: Int, height: Int, seed: UInt64) throws -> PixelBuffer {
        var rng = SplitMix64(seed: seed)
        let image = try PixelBuffer(width: width, height: height, pixelFormat: .gray)
        let base = image.baseAddress.assumingMemoryBound(to: UInt8.self)
        var y = 0
        while y < height {
            var row = [UInt8]()
            var colour: UInt8 = rng.int(2) == 0 ? 0 : 255
            func run(_ length: Int) {
                row += [UInt8](repeating: colour, count: max(1, length))
                colour = 255 - colour
            }
            while row.count < width {
                switch rng.int(6) {
                case 0, 1:
                    for _ in 0..<(1 + rng.int(12)) { run(1 + rng.int(4)) }
                case 2:
                    let m = 1 + rng.int(4)
                    for _ in 0..<(6 + rng.int(12)) { run(m + (rng.int(4) == 0 ? rng.int(3) - 1 : 0)) }
                case 3:
                    let pattern = SymbolCues.pdf417Patterns[rng.int(4)]
                    let m = 1 + rng.int(3)
                    if pattern.firstDark != (colour == 0) { run(1 + rng.int(6)) }
                    for w in pattern.widths { run(w * m + (rng.int(5) == 0 ? rng.int(3) - 1 : 0)) }
                case 4:
                    run(5 + rng.int(30))
                default:
                    let m = 1 + rng.int(3)
                    for _ in 0..<4 { run(m) }
                    run(3 * m)
                    for _ in 0..<4 { run(m) }
                }
            }
            let copies = 1 + rng.int(6)
            let shift = rng.int(4) == 0 ? rng.int(3) : 0
            for _ in 0..<copies where y < height {
                for x in 0..<width { base[y * image.bytesPerRow + x] = row[min(width - 1, x + shift)] }
                y += 1
            }
        }
        return image
    }

    @Test func aWindowOfEqualRunsHasNeighboursWithin3Point2Fold() {
        // What the single pass relies on to skip windows: `equalRuns` passes a window only when
        // every two neighbouring runs in it are within 3.2-fold (5a ≤ 16b both ways).
        var rng = SplitMix64(seed: 31)
        var passed = 0
        for _ in 0..<200_000 {
            let count = [7, 10][rng.int(2)]
            let base = 1 + rng.int(6)
            let runs = (0..<count).map { _ in max(1, base + rng.int(2 * base + 1) - base + (rng.int(8) == 0 ? rng.int(10) : 0)) }
            guard SymbolCues.equalRuns(count, from: 0, { runs[$0] }) != nil else { continue }
            passed += 1
            for i in 0..<(count - 1) {
                #expect(5 * runs[i] <= 16 * runs[i + 1] && 5 * runs[i + 1] <= 16 * runs[i], "\(runs)")
            }
        }
        #expect(passed > 1000, "too few windows passed: the test shows nothing")
    }

    @Test func theSinglePassFindsWhatEveryWindowFound() throws {
        var fired = (hits: 0, pdf417: 0, dm: 0)
        for seed in 0..<40 as Range<UInt64> {
            let image = try Self.randomRuns(width: 320, height: 240, seed: seed)
            for kinds: SymbolCues.Kinds in [[.aztec, .pdf417, .dataMatrix], [.pdf417], [.dataMatrix, .aztec]] {
                let (old, new) = withExtendedLifetime(image) { Self.compareOnEveryRow(Thresholded(image), kinds: kinds) }
                #expect(Self.summary(old) == Self.summary(new), "seed \(seed), kinds \(kinds.rawValue)")
                fired.hits += old.pdf417Hits.count
                fired.pdf417 += old.pdf417.count
                fired.dm += old.dataMatrix.count
            }
        }
        #expect(fired.hits > 100 && fired.pdf417 > 10, "random rows crossed no PDF417 pattern: the test shows nothing")
    }

    @Test(arguments: ["datamatrix.png", "aztec.png", "pdf417.png"])
    func theSinglePassFindsWhatEveryWindowFoundOnSymbols(_ file: String) throws {
        var seen: SymbolCues.Kinds = []
        for (i, (module, angle)) in [(2.0, 0.0), (3, 0), (3, 5), (4.5, 90), (2, 180)].enumerated() {
            let gray = try SymbolCueTests.placed(
                "Tests/Fixtures/codes/\(file)", module: module, angle: angle, centre: CGPoint(x: 320, y: 240), seed: 40 + UInt64(i))
            for offset in [0.0, 6, 15] {
                let binary = try CodeImaging.aboveMean(gray, try FinderEvidence.localMean(gray), offset: offset)
                let (old, new) = withExtendedLifetime(binary) {
                    Self.compareOnEveryRow(Thresholded(binary), kinds: [.aztec, .pdf417, .dataMatrix])
                }
                #expect(Self.summary(old) == Self.summary(new), "\(file) at \(module) px, \(angle)°, offset \(offset)")
                seen.formUnion(old.seen)
            }
        }
        #expect(!seen.isEmpty, "\(file): no cue on any frame: the test shows nothing")
    }
}
