import CVBridge
import Foundation

extension AztecCore {
    /// Bullseyes in a frame the gate does not look at (a small image): the `SymbolCues` of the
    /// full- and half-size finder looks (the half-size one sees modules too large for the local
    /// mean's window at full size), in full-size pixels.
    static func bullseyes(in gray: PixelBuffer) throws(CaptureError) -> [FinderEvidence.Finder] {
        var out = try FinderEvidence.look(gray, cues: [.aztec]).cues.bullseyes
        if min(gray.width, gray.height) >= 64 {
            let half = try CodeImaging.resized(gray, width: gray.width / 2, height: gray.height / 2)
            let look = try FinderEvidence.look(half, offset: 6, cues: [.aztec])
            out += look.cues.scaled(by: Double(gray.width) / Double(half.width)).bullseyes
        }
        return out
    }
}

extension ScanRun {
    /// Aztec symbols whose core was read (`aztecCores`) that no read so far explains: a rune is
    /// reported from its mode message, any other symbol is warped
    /// upright from the core's module map, its outer edges measured on that image and the warp
    /// redone from them (the core alone extrapolates its perspective several times its own size),
    /// and zxing-cpp reads the result; when that fails, an image of the symbol's modules, each
    /// sampled at its centre and thresholded against its neighbours, is read instead (blur and
    /// uneven light that zxing-cpp's binariser does not survive).
    mutating func readAztec(_ gray: PixelBuffer, _ cores: [(FinderEvidence.Finder, AztecCore.Symbol)]) throws(CaptureError) {
        for (bullseye, symbol) in cores {
            if found.contains(where: { $0.type == .aztec && DeviceSpace.boundingBox(of: $0.points).contains(bullseye.centre) }) {
                continue
            }
            if let rune = symbol.rune {
                let digits = Array(String(rune).utf8)
                add(
                    [ScannedSymbol(
                        type: .aztec, bytes: [UInt8](repeating: UInt8(ascii: "0"), count: 3 - digits.count) + digits,
                        points: symbol.corners, quality: 1, orientation: 0)],
                    mapping: nil)
                continue
            }
            try readRectified(gray, symbol)
        }
    }

    /// `aztecCores` around every bullseye `AztecCore.bullseyes` finds in `gray`: an image read
    /// whole, whose bullseyes no finder look collected.
    mutating func aztecCores(inWhole gray: PixelBuffer) throws(CaptureError) -> [(FinderEvidence.Finder, AztecCore.Symbol)] {
        try aztecCores(gray, around: try AztecCore.bullseyes(in: gray))
    }

    /// The cores read around `bullseyes` (full-size pixels), one per place (the looks see one
    /// bullseye at several scales), at most eight; counted as localisations.
    mutating func aztecCores(_ gray: PixelBuffer, around bullseyes: [FinderEvidence.Finder]) throws(CaptureError)
        -> [(FinderEvidence.Finder, AztecCore.Symbol)]
    {
        var tried: [FinderEvidence.Finder] = []
        var out: [(FinderEvidence.Finder, AztecCore.Symbol)] = []
        for b in bullseyes {
            guard !tried.contains(where: { hypot($0.centre.x - b.centre.x, $0.centre.y - b.centre.y) < 5 * max($0.module, b.module) })
            else { continue }
            guard tried.count < 8 else { break }
            tried.append(b)
            counts.localisations += 1
            if let symbol = try aztecCore(gray, around: b) { out.append((b, symbol)) }
        }
        return out
    }

    /// The core around `bullseye`, read from the frame thresholded at a scale where its modules
    /// are at most 8 pixels (the local mean's 31-pixel window then spans several of them), or
    /// half that scale, or twice it.
    mutating func aztecCore(_ gray: PixelBuffer, around bullseye: FinderEvidence.Finder) throws(CaptureError) -> AztecCore.Symbol? {
        var factor = 1
        while bullseye.module / Double(factor) > 8, min(gray.width, gray.height) / (2 * factor) >= 32 { factor *= 2 }
        if let symbol = try aztecCore(gray, around: bullseye, reducedBy: factor) { return symbol }
        // Blur and noise at this scale: the next one down.
        if bullseye.module / Double(factor) >= 3, min(gray.width, gray.height) / (2 * factor) >= 32,
            let symbol = try aztecCore(gray, around: bullseye, reducedBy: factor * 2)
        {
            return symbol
        }
        // A recompressed photo's soft rings (WebP, JPEG) merge when reduced: the next one up,
        // where the window spans fewer modules (zxing-cpp's aztec-2 samples: 11-px modules).
        guard passes.aztecSoftScales, factor > 1 else { return nil }
        return try aztecCore(gray, around: bullseye, reducedBy: factor / 2)
    }

    mutating func aztecCore(_ gray: PixelBuffer, around bullseye: FinderEvidence.Finder, reducedBy factor: Int) throws(CaptureError)
        -> AztecCore.Symbol?
    {
        let binary = try aztecBinary(gray, reducedBy: factor)
        let sx = Double(gray.width) / Double(binary.width), sy = Double(gray.height) / Double(binary.height)
        var scaled = bullseye
        scaled.centre = CGPoint(x: bullseye.centre.x / sx, y: bullseye.centre.y / sy)
        scaled.module = bullseye.module / sx
        guard var symbol = withExtendedLifetime(binary, { AztecCore.read(Thresholded(binary), bullseye: scaled) }) else {
            return nil
        }
        var m = symbol.moduleToImage.m
        for i in 0..<3 { m[i] *= sx }
        for i in 3..<6 { m[i] *= sy }
        symbol.moduleToImage = Homography(m: m)
        return symbol
    }

    /// `gray` reduced by `factor` and thresholded against its local mean, once per frame and
    /// factor (`FrameLooks.aztecBinaries`): every bullseye candidate's core is read from the same
    /// image (a frame of texture has several candidates, and the whole-frame threshold was most
    /// of what each cost). Full and half size reuse the finder looks' images and local means.
    /// Dark below the local mean, light at or above it (offset 1 on whole levels): flat light
    /// (the quiet zone) stays light.
    mutating func aztecBinary(_ gray: PixelBuffer, reducedBy factor: Int) throws(CaptureError) -> PixelBuffer {
        if let binary = looks.aztecBinaries[factor] { return binary }
        let image: PixelBuffer, mean: PixelBuffer
        switch factor {
        case 1: (image, mean) = (gray, try fullSizeMean(gray))
        case 2:
            image = try halfImage(gray)
            // The finder look's mean counts bright flat blocks as the texture beside them
            // (`Passes.flatBlockRange`); a core's rings are read against the plain mean.
            mean = passes.flatBlockRange == nil ? try halfSizeMean(image) : try FinderEvidence.localMean(image)
        default:
            image = try CodeImaging.resized(gray, width: gray.width / factor, height: gray.height / factor)
            mean = try FinderEvidence.localMean(image)
        }
        let binary = try CodeImaging.aboveMean(image, mean, offset: 1)
        looks.aztecBinaries[factor] = binary
        return binary
    }

    /// Quiet-zone modules around a rectified symbol.
    static let aztecQuietZone = 4

    /// Warps the symbol upright (see `readAztec`) and reads it; true when zxing-cpp read an Aztec code.
    @discardableResult
    mutating func readRectified(_ gray: PixelBuffer, _ symbol: AztecCore.Symbol) throws(CaptureError) -> Bool {
        let dim = symbol.dimension, q = Self.aztecQuietZone
        // About 5 pixels per module, at most 1024 pixels a side.
        let s = min(5.0, 1024 / Double(dim + 2 * q))
        guard s >= 2 else { return false }
        let size = Int((Double(dim + 2 * q) * s).rounded(.up))
        let a = Double(q) * s, b = Double(q + dim) * s
        let target = [CGPoint(x: a, y: a), CGPoint(x: b, y: a), CGPoint(x: b, y: b), CGPoint(x: a, y: b)]
        var (upright, back) = try Self.warped(gray, from: symbol.corners, to: target, width: size, height: size, toFrame: { $0 })
        let fromCore = (upright, back)
        // Twice: the first warp can be several modules off at the symbol's edge.
        let tolerance = (4 + 0.25 * Double(dim)) * s
        for _ in 0..<2 {
            guard let edges = try Self.symbolEdges(upright, module: s, dimension: dim, quiet: q),
                zip(edges, target).allSatisfy({ hypot($0.x - $1.x, $0.y - $1.y) < tolerance })
            else { break }
            (upright, back) = try Self.warped(
                gray, from: edges.map(back.apply), to: target, width: size, height: size, toFrame: { $0 })
        }
        var hints = ZXingHints.defaults([.aztec])
        hints.tryRotate = false
        hints.tryDownscale = false
        if try zxingRead(upright, mapping: back, hints: hints) { return true }
        // A photo recompressed (WebP, JPEG) leaves soft module edges that zxing-cpp 1.4's
        // binarizer splits at 5 pixels per module and keeps at twice that (real photos of
        // zxing-cpp's aztec-2 samples).
        if passes.aztecSoftScales {
            if try zxingRead(try CodeImaging.doubled(upright), mapping: back.afterScaling(0.5), hints: hints) { return true }
        }
        let module = 3.0
        let values = Self.moduleValues(upright, module: s, dimension: dim, quiet: q)
        let clean = try Self.moduleImage(dark: Self.darkByLocalMean(values, dimension: dim), dimension: dim, drawnAt: module)
        if try zxingRead(clean, mapping: back.afterScaling(s / module), hints: hints) { return true }
        guard passes.aztecData else { return false }
        // zxing-cpp read nothing it could vouch for (it may have read past the last data bit,
        // `AztecCore.payloadFits`): cvcam's own decoder, on the modules thresholded two ways, of
        // the refined warp and of the core's own (a symbol whose outer layer is mostly light, as
        // zero bytes make it, misleads the edge measurement).
        let coreValues = Self.moduleValues(fromCore.0, module: s, dimension: dim, quiet: q)
        for (values, map) in [(values, back), (coreValues, fromCore.1)] {
            for dark in [Self.darkByLocalRange(values, dimension: dim), Self.darkByLocalMean(values, dimension: dim)] {
                guard let payload = AztecData.decode(symbol, dark: { dark[$1 * dim + $0] }) else { continue }
                let before = found.count
                add(
                    [ScannedSymbol(
                        type: .aztec, bytes: payload.bytes, points: target.map(map.apply), quality: 1, orientation: 0,
                        eci: payload.eci)],
                    mapping: nil)
                return found.count > before
            }
        }
        return false
    }

    /// Each module's brightness in an upright image (`module` pixels per module, the symbol
    /// `quiet` modules in): the mean of the 2×2 pixels whose centres surround the module's
    /// centre, row by row. A pixel's centre is its integer coordinate (the warp's convention):
    /// the module centre (q + i + 0.5)·s lies between pixels ⌊c − 0.5⌋ and ⌊c − 0.5⌋ + 1; the
    /// pixels before those sat a fifth of a module off at 5 px per module, and a blurred photo's
    /// modules then read as their neighbours (zxing-cpp's `aztec-2/20.webp`).
    static func moduleValues(_ upright: PixelBuffer, module s: Double, dimension dim: Int, quiet q: Int) -> [Double] {
        let stride = upright.bytesPerRow
        let src = upright.baseAddress.assumingMemoryBound(to: UInt8.self)
        var values = [Double](repeating: 0, count: dim * dim)
        for j in 0..<dim {
            for i in 0..<dim {
                let x = Int(((Double(q + i) + 0.5) * s - 0.5).rounded(.down)), y = Int(((Double(q + j) + 0.5) * s - 0.5).rounded(.down))
                let x0 = max(0, min(upright.width - 2, x)), y0 = max(0, min(upright.height - 2, y))
                let v = Int(src[y0 * stride + x0]) + Int(src[y0 * stride + x0 + 1]) + Int(src[(y0 + 1) * stride + x0])
                    + Int(src[(y0 + 1) * stride + x0 + 1])
                values[j * dim + i] = Double(v) / 4
            }
        }
        return values
    }

    /// Dark modules: below the mean of the 7×7 modules around them.
    static func darkByLocalMean(_ values: [Double], dimension dim: Int) -> [Bool] {
        darkByNeighbourhood(values, dimension: dim) { v, window in v < window.reduce(0, +) / Double(window.count) }
    }

    /// Dark modules: below the middle of the darkest and lightest of the 7×7 modules around them,
    /// or of the whole symbol where those differ by less than a quarter of its range (a stretch of
    /// one colour: runs of light modules, as in padding or zero bytes, have no dark neighbour).
    static func darkByLocalRange(_ values: [Double], dimension dim: Int) -> [Bool] {
        let lo = values.min() ?? 0, hi = values.max() ?? 255
        return darkByNeighbourhood(values, dimension: dim) { v, window in
            let a = window.min()!, b = window.max()!
            return b - a >= 0.25 * (hi - lo) ? v < (a + b) / 2 : v < (lo + hi) / 2
        }
    }

    static func darkByNeighbourhood(
        _ values: [Double], dimension dim: Int, _ rule: (Double, [Double]) -> Bool
    ) -> [Bool] {
        var out = [Bool](repeating: false, count: dim * dim)
        var window: [Double] = []
        window.reserveCapacity(49)
        for j in 0..<dim {
            for i in 0..<dim {
                window.removeAll(keepingCapacity: true)
                for v in max(0, j - 3)...min(dim - 1, j + 3) {
                    for u in max(0, i - 3)...min(dim - 1, i + 3) { window.append(values[v * dim + u]) }
                }
                out[j * dim + i] = rule(values[j * dim + i], window)
            }
        }
        return out
    }

    /// The symbol's outer edges in an upright image (`module` pixels per module, the symbol
    /// `quiet` modules in from each side): for each side, the outermost dark pixel of every row
    /// or column across its middle 70 %, and the line through those that lie on the outer
    /// boundary (a side's outer modules are about half dark, so the outermost quarter of the
    /// points, refined five times, lies on it). Corners clockwise from the top-left; nil when
    /// a side has too few points.
    static func symbolEdges(_ upright: PixelBuffer, module s: Double, dimension dim: Int, quiet q: Int) throws(CaptureError)
        -> [CGPoint]?
    {
        let block = Int32(max(3, Int(5 * s) | 1))
        let binary = try CodeImaging.aboveMean(upright, try CodeImaging.localMean(upright, block: block), offset: 8)
        return withExtendedLifetime(binary) { () -> [CGPoint]? in
            let image = Thresholded(binary)
            let size = upright.width, middle = size / 2
            let lo = Int((Double(q) + 0.15 * Double(dim)) * s), hi = Int((Double(q) + 0.85 * Double(dim)) * s)
            guard lo < hi else { return nil }
            var lines: [AztecCore.Line] = []
            let centre = CGPoint(x: Double(size) / 2, y: Double(size) / 2)
            for side in 0..<4 {
                var points: [CGPoint] = []
                for k in lo..<hi {
                    switch side {
                    case 0: if let y = (0..<middle).first(where: { image.pixel(k, $0) == 0 }) { points.append(CGPoint(x: k, y: y)) }
                    case 1: if let x = (middle..<size).last(where: { image.pixel($0, k) == 0 }) { points.append(CGPoint(x: x + 1, y: k)) }
                    case 2: if let y = (middle..<size).last(where: { image.pixel(k, $0) == 0 }) { points.append(CGPoint(x: k, y: y + 1)) }
                    default: if let x = (0..<middle).first(where: { image.pixel($0, k) == 0 }) { points.append(CGPoint(x: x, y: k)) }
                    }
                }
                guard points.count >= 10, var line = AztecCore.Line(fitting: points) else { return nil }
                for _ in 0..<5 {
                    // Outward distances (the centre lies inward).
                    let sign = line.offset(of: centre) > 0 ? -1.0 : 1.0
                    let offsets = points.map { sign * line.offset(of: $0) }
                    let reference = offsets.sorted()[Int(Double(offsets.count - 1) * 0.85)]
                    let keep = zip(points, offsets).filter { abs($0.1 - reference) < 0.5 * s }.map(\.0)
                    guard keep.count >= 5, let refit = AztecCore.Line(fitting: keep) else { return nil }
                    line = refit
                }
                lines.append(line)
            }
            var corners: [CGPoint] = []
            for k in 0..<4 {
                guard let p = lines[(k + 3) % 4].intersection(lines[k]) else { return nil }
                corners.append(p)
            }
            return corners
        }
    }

    /// An image of the symbol's modules, `drawnAt` pixels each with a 4-module quiet zone, the
    /// `dark` ones (row by row, e.g. `darkByLocalMean` of `moduleValues`) black.
    static func moduleImage(dark: [Bool], dimension dim: Int, drawnAt d: Double) throws(CaptureError) -> PixelBuffer {
        let side = Int((Double(dim + 8) * d).rounded())
        let out = try PixelBuffer(width: side, height: side, pixelFormat: .gray)
        let dst = out.baseAddress.assumingMemoryBound(to: UInt8.self)
        for y in 0..<side { memset(dst + y * out.bytesPerRow, 255, side) }
        for j in 0..<dim {
            for i in 0..<dim where dark[j * dim + i] {
                let x0 = Int((Double(i + 4) * d).rounded()), x1 = Int((Double(i + 5) * d).rounded())
                let y0 = Int((Double(j + 4) * d).rounded()), y1 = Int((Double(j + 5) * d).rounded())
                for y in y0..<y1 { memset(dst + y * out.bytesPerRow + x0, 0, x1 - x0) }
            }
        }
        return out
    }
}

extension Homography {
    /// This map after its input is scaled by `factor` about the origin (a module image's pixels
    /// onto the upright image it was sampled from: both have a 4-module margin).
    func afterScaling(_ factor: Double) -> Homography {
        var m = self.m
        for row in 0..<3 {
            m[row * 3] *= factor
            m[row * 3 + 1] *= factor
        }
        return Homography(m: m)
    }
}
