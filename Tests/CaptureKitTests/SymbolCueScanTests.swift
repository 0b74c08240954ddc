import Foundation
import Testing

@_spi(Benchmark) @testable import CaptureVision
import CaptureKitTesting

/// `SymbolCues.scanRow`'s single pass over a row's runs against the plain one it replaced (every
/// window of every kind tested in turn): the same cues in the same order, on random rows built to
/// hold ladders, PDF417 patterns and texture, and on thresholded frames with real symbols.
@Suite struct SymbolCueScanTests {
    /// The scan as it was: every Aztec window centred on a dark run, every window of each PDF417
    /// pattern, every Data Matrix window, each kind in turn (a ladder found is judged by the
    /// same `timingEdge`).
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
                if let inner = SymbolCues.equalRuns(7, from: k + 1, len), 14 * len(k) >= inner, 14 * len(k + 8) >= inner,
                    (1...3).allSatisfy({ SymbolCues.ringsMirrored(len(c - $0), len(c + $0)) })
                {
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
                if SymbolCues.timingEdge(binary, y: y, starts: starts, from: k, to: end, firstDark: dark(k)) {
                    cues.dataMatrix.append(CGRect(x: x0, y: y, width: x1 - x0, height: 0))
                    if cues.dataMatrix.count >= limit { break }
                }
                k = end
            }
        }
    }

    /// The bullseye check as it was: each walk bounded by half the row's nine runs only, both
    /// walks taken before any comparison.
    static func referenceRingCheck<Binary: FinderBinaryImage>(
        _ binary: Binary, _ cx: Int, _ cy: Int, _ dx: Int, _ dy: Int, _ expected: Int
    ) -> Bool {
        let w = binary.width, h = binary.height
        let centre = binary.pixel(cx, cy)
        let maxRun = expected / 2
        func walk(_ sx: Int, _ sy: Int) -> [Int]? {
            var x = cx, y = cy, colour = centre
            var c = [0]
            while true {
                guard x >= 0, y >= 0, x < w, y < h else { return c.count == 5 ? c : nil }
                let v = binary.pixel(x, y)
                if v != colour {
                    colour = v
                    if c.count == 5 { return c }
                    c.append(0)
                }
                c[c.count - 1] += 1
                if c[c.count - 1] > maxRun { return nil }
                x += sx
                y += sy
            }
        }
        guard let a = walk(dx, dy), let b = walk(-dx, -dy) else { return false }
        let runs = [a[3], a[2], a[1], a[0] + b[0] - 1, b[1], b[2], b[3]]
        let total = runs.reduce(0, +)
        guard 2 * total >= expected * 7 / 9, total * 9 <= 2 * 7 * expected,
            let inner = SymbolCues.equalRuns(7, from: 0, { runs[$0] })
        else { return false }
        return 14 * a[4] >= inner && 14 * b[4] >= inner
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
            SymbolCues.scanRow(binary, y: y, starts: starts, runs: n, firstDark: binary.pixel(0, y) == 0, kinds: kinds, into: &new)
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

    @Test func theBullseyeCheckStopsEarlyAndDecidesAsBefore() throws {
        // `ringCheck` leaves a walk once a run is longer than the end's checks allow and skips
        // the second walk when the first's rings are unequal: the same answers, on random runs,
        // on sensor noise thresholded at its mean and on placed Aztec symbols.
        var images: [PixelBuffer] = []
        for seed in 0..<6 as Range<UInt64> { images.append(try Self.randomRuns(width: 200, height: 160, seed: 90 + seed)) }
        for (i, (module, angle)) in [(2.0, 0.0), (3, 20), (2.5, 45), (4.5, 90)].enumerated() {
            let gray = try SymbolCueTests.placed(
                "Tests/Fixtures/codes/aztec.png", module: module, angle: angle, centre: CGPoint(x: 320, y: 240), seed: 60 + UInt64(i))
            images.append(try CodeImaging.aboveMean(gray, try FinderEvidence.localMean(gray), offset: 0))
        }
        var rng = SplitMix64(seed: 77)
        var checked = 0, passed = 0
        for image in images {
            withExtendedLifetime(image) {
                let binary = Thresholded(image)
                for _ in 0..<20_000 {
                    let x = rng.int(binary.width), y = rng.int(binary.height), expected = 9 + rng.int(60)
                    for (dx, dy) in [(0, 1), (1, 1), (1, -1), (1, 0)] {
                        let old = Self.referenceRingCheck(binary, x, y, dx, dy, expected)
                        #expect(SymbolCues.ringCheck(binary, x, y, dx, dy, expected) == old, "(\(x), \(y)) \(dx),\(dy) \(expected)")
                        checked += 1
                        if old { passed += 1 }
                    }
                }
                // Around each bullseye the row scan finds, where most checks pass.
                var cues = SymbolCues()
                _ = FinderEvidence.scan(binary, limit: 64, rowStep: 1, cues: [.aztec], into: &cues)
                for b in cues.bullseyes {
                    let e = Int((b.module * 9).rounded())
                    for x in Int(b.centre.x) - 3...Int(b.centre.x) + 3 {
                        for y in Int(b.centre.y) - 3...Int(b.centre.y) + 3 {
                            for expected in e - 4...e + 4 {
                                for (dx, dy) in [(0, 1), (1, 1), (1, -1), (1, 0)] {
                                    let old = Self.referenceRingCheck(binary, x, y, dx, dy, expected)
                                    #expect(SymbolCues.ringCheck(binary, x, y, dx, dy, expected) == old)
                                    checked += 1
                                    if old { passed += 1 }
                                }
                            }
                        }
                    }
                }
            }
        }
        #expect(checked > 100_000 && passed > 20, "\(passed) of \(checked) passed: the test shows nothing")
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

/// The Data Matrix timing edge's corner checks (`SymbolCues.timingEdge`): texture that shows a
/// ladder of equal runs with a quiet strip along it and a dark line leaving its end passed the
/// cue before, and cost a camera frame zxing-cpp's reads; the L's corner has the quiet zone
/// beside its solid arm too, or the other timing edge at the ladder's far end.
@Suite struct DataMatrixCornerTests {
    /// A light 120×70 image, 2-px modules: a timing ladder of 12 modules on rows 20–21 from
    /// x = 40 (dark first), the quiet zone above it, random data below, and the L's solid arm
    /// down from its dark end; left of the arm `beside` (light, or random texture); right of
    /// the ladder's last module, the column of the other timing edge when `timing` (random
    /// texture otherwise).
    static func corner(beside light: Bool, timing: Bool, seed: UInt64) throws -> PixelBuffer {
        var rng = SplitMix64(seed: seed)
        let w = 120, h = 70
        let image = try PixelBuffer(width: w, height: h, pixelFormat: .gray)
        let p = image.baseAddress.assumingMemoryBound(to: UInt8.self)
        func set(_ x: Int, _ y: Int, _ dark: Bool) { p[y * image.bytesPerRow + x] = dark ? 0 : 255 }
        for y in 0..<h { for x in 0..<w { set(x, y, false) } }
        let x0 = 40, m = 2, modules = 12
        // Data: random modules under the ladder, between the arm and the far column.
        for my in 1..<14 { for mx in 1..<(modules - 1) { let d = rng.int(2) == 0; for dy in 0..<m { for dx in 0..<m { set(x0 + mx * m + dx, 20 + my * m + dy, d) } } } }
        // The ladder: dark, light, ... (the last module light, merged with the quiet zone).
        for mx in 0..<modules where mx % 2 == 0 { for dy in 0..<m { for dx in 0..<m { set(x0 + mx * m + dx, 20 + dy, true) } } }
        // The solid arm.
        for y in 20..<(20 + 14 * m) { for dx in 0..<m { set(x0 + dx, y, true) } }
        // Beside the arm: light, or texture three modules wide.
        if !light { for y in 22..<(20 + 14 * m) { for x in (x0 - 3 * m)..<x0 { set(x, y, rng.int(2) == 0) } } }
        // The far column (one module past the ladder's last dark module): alternating, or texture.
        let fx = x0 + (modules - 1) * m
        for my in 1..<14 { let d = timing ? my % 2 == 1 : rng.int(3) == 0; for dy in 0..<m { for dx in 0..<m { set(fx + dx, 20 + my * m + dy, d) } } }
        return image
    }

    /// `timingEdge` on row 20's ladder (the runs from x = 40 up to the long light run).
    static func isEdge(_ image: PixelBuffer) -> Bool {
        withExtendedLifetime(image) {
            let binary = Thresholded(image)
            let row = binary.row(20)
            var starts = [0]
            for x in 1..<binary.width where row[x] != row[x - 1] { starts.append(x) }
            starts.append(binary.width)
            guard let k = starts.firstIndex(of: 40), let end = starts.firstIndex(of: 40 + 11 * 2) else { return false }
            return starts.withUnsafeMutableBufferPointer { s in
                SymbolCues.timingEdge(binary, y: 20, starts: s.baseAddress!, from: k, to: end, firstDark: true)
            }
        }
    }

    /// The checks before the corner's (quiet zone along the ladder, solid arm at the dark end,
    /// none parallel to it two modules along), which the textured corner passes.
    static func passedBefore(_ image: PixelBuffer) -> Bool {
        withExtendedLifetime(image) {
            let binary = Thresholded(image)
            guard let side = SymbolCues.quietAlongside(binary, 40, 62, 20, 2),
                let arm = SymbolCues.solidPath(binary, 40, 20, side, 2)
            else { return false }
            return !SymbolCues.solidAlong(binary, arm, 4, 20, side)
        }
    }

    @Test func theLsCornerIsToldFromTextureWhateverTheDataBesideItsArm() throws {
        // 2-px modules: a 1-px step sideways, which the arm's walk allows for a turned symbol,
        // reaches the next column of modules. With the module two along the ladder walked on
        // its own, 138 and 137 of these corners passed (a line through the data); followed
        // parallel to the arm, 169 and 169. And the other timing edge at the far end must
        // alternate for 7.5 modules, six changes: four in 5.5 let texture through in 41 of 200.
        var quiet = 0, timing = 0, textured = 0
        for seed in 0..<200 as Range<UInt64> {
            if Self.isEdge(try Self.corner(beside: true, timing: false, seed: seed)) { quiet += 1 }
            if Self.isEdge(try Self.corner(beside: false, timing: true, seed: seed)) { timing += 1 }
            if Self.isEdge(try Self.corner(beside: false, timing: false, seed: seed)) { textured += 1 }
        }
        #expect(quiet >= 160, "the L's corner with the quiet zone beside its arm: \(quiet) of 200")
        #expect(timing >= 160, "the other timing edge at the ladder's far end: \(timing) of 200")
        #expect(textured <= 30, "texture beside the arm and no timing edge: \(textured) of 200 passed")
    }

    @Test func aStandingSymbolOfTwoPixelModulesShowsItsShortTimingSide() throws {
        // The 12×26 fixture turned 90°: rows cross only its 12-module timing side. Its second
        // dark module has data above it that a walk allowed a pixel sideways followed for four
        // modules, and the corner was taken for stripes on every row.
        var cued = 0
        for i in 0..<6 {
            let centre = CGPoint(x: 300 + 7.3 * Double(i), y: 230 + 3.7 * Double(i))
            let gray = try SymbolCueTests.placed("Tests/Fixtures/codes/datamatrix.png", module: 2, angle: 90, centre: centre, seed: 90 + UInt64(i))
            let look = try FinderEvidence.look(gray, offset: 0, rowStep: 1, cues: [.dataMatrix])
            let near = look.cues.dataMatrix.filter { abs($0.midX - centre.x) < 30 && abs($0.minY - centre.y) < 40 }
            if !near.isEmpty { cued += 1 }
        }
        #expect(cued >= 5, "\(cued) of 6 placements showed the timing side")
    }

    @Test func aLadderBesideTextureIsNoTimingEdge() throws {
        var textured = 0, quiet = 0, timing = 0, before = 0
        for seed in 0..<20 as Range<UInt64> {
            let texture = try Self.corner(beside: false, timing: false, seed: seed)
            if Self.passedBefore(texture) { before += 1 }
            if Self.isEdge(texture) { textured += 1 }
            if Self.isEdge(try Self.corner(beside: true, timing: false, seed: seed)) { quiet += 1 }
            if Self.isEdge(try Self.corner(beside: false, timing: true, seed: seed)) { timing += 1 }
        }
        // Some random data puts a solid run two modules along, or fills the row under the ladder
        // too much or too little, which no check lets through; and the data column beside the
        // far one alternates by chance now and then (the check tries a column to either side).
        #expect(quiet >= 12, "the L's corner with the quiet zone beside its arm: \(quiet) of 20")
        #expect(timing >= 12, "the other timing edge at the ladder's far end: \(timing) of 20")
        #expect(before >= 15, "the textured corner passes the checks before the corner's: \(before) of 20")
        #expect(textured <= 2, "texture beside the arm and no timing edge: \(textured) of 20 passed")
    }

    @Test func codeFreePhotosOpenNoDataMatrixRead() throws {
        // The face fixture photos at two camera sizes: before the corner checks, four of these
        // frames opened zxing-cpp's Data Matrix reads (the whole frame, its negative, a crop
        // around the edge and, at 640x480, the frame doubled); one still does.
        let paths = try Fixtures.facePhotoPaths()
        let detector = try CodeDetector(metadataObjectTypes: CodeDetector.twoDimensionalTypes)
        var opened: [String] = []
        for path in paths {
            for (w, h) in [(640, 480), (1280, 720)] {
                let before = detector.passCounts.dataMatrixCues
                _ = try detector.detections(in: try QRTestCorpus.photo(at: path, width: w, height: h))
                if detector.passCounts.dataMatrixCues > before { opened.append("\((path as NSString).lastPathComponent) \(w)x\(h)") }
            }
        }
        #expect(opened.count <= 1, "\(opened)")
    }
}

/// Where the finder looks note cues: the full-size look (offset 0) leaves Data Matrix on the
/// gate look's rows, and PDF417, to the other looks (`ScanRun.fullSizeFinders`), since its
/// threshold makes texture many short runs whose cue tests cost more than its finder scan.
@Suite struct CueRowTests {
    @Test func aLookLeavesTheRowsAnotherLookScansForCues() throws {
        let image = try SymbolCueScanTests.randomRuns(width: 320, height: 240, seed: 5)
        let (all, split) = withExtendedLifetime(image) {
            let binary = Thresholded(image)
            var all = SymbolCues(), split = SymbolCues()
            _ = FinderEvidence.scan(binary, limit: 64, rowStep: 2, cues: [.pdf417], into: &all)
            _ = FinderEvidence.scan(binary, limit: 64, rowStep: 2, cues: [.pdf417], cuesElsewhere: (4, .pdf417), into: &split)
            return (all, split)
        }
        #expect(all.pdf417Hits.contains { ($0.y - 1) % 4 == 0 }, "no crossing on the other look's rows: the test shows nothing")
        #expect(split.pdf417Hits.contains { ($0.y - 1) % 4 != 0 })
        #expect(!split.pdf417Hits.contains { ($0.y - 1) % 4 == 0 })
        // The finders are the same either way.
        let finders = withExtendedLifetime(image) { () -> ([CGPoint], [CGPoint]) in
            var c = SymbolCues()
            let binary = Thresholded(image)
            return (
                FinderEvidence.scan(binary, limit: 64, rowStep: 2).map(\.centre),
                FinderEvidence.scan(binary, limit: 64, rowStep: 2, cues: [.pdf417], cuesElsewhere: (4, .pdf417), into: &c).map(\.centre)
            )
        }
        #expect(finders.0 == finders.1)
    }

    @Test func theFullSizeLookNotesNoPDF417AndNoCueOnTheGateRows() throws {
        // A PDF417 symbol with 2-px modules on a camera frame: the full-size look notes no PDF417
        // crossing and no Data Matrix edge on the gate look's rows; the gate opens all the same.
        let frame = try SymbolCueTests.placed(
            "Tests/Fixtures/codes/pdf417.png", module: 2, angle: 0, centre: CGPoint(x: 320, y: 240), seed: 9)
        var run = ScanRun(
            scanner: try ZBarScanner(), zxing: try ZXingReader(), passes: CodeDetector.Passes(), types: [.pdf417, .dataMatrix, .aztec])
        run.looks.cueKinds = [.pdf417, .dataMatrix, .aztec]
        _ = try run.fullSizeFinders(frame)
        #expect(run.looks.cues.pdf417Hits.isEmpty)
        // The same look asked for PDF417 on every row crosses the patterns: the test shows something.
        let everyRow = try FinderEvidence.look(frame, mean: try FinderEvidence.localMean(frame), offset: 0, cues: [.pdf417])
        #expect(!everyRow.cues.pdf417Hits.isEmpty)
        #expect(!run.looks.cues.dataMatrix.contains { (Int($0.minY) - 1) % 4 == 0 })
        #expect(try run.cuesSeen(frame).contains(.pdf417))
    }
}
