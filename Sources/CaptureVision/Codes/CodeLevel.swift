import CVBridge
import Foundation

/// The gray level that splits a QR code's own pixels into dark and light modules.
///
/// ZBar and zxing-cpp 1.4 threshold what they read against its surroundings. A faint code (its
/// modules 25–50 levels apart) printed on or shown beside something much brighter (a white
/// sticker frame, a lit wall, a screen's bezel) sits in windows that the bright surround pulls
/// above the code's light modules: the whole code reads as dark and neither decoder sees it,
/// though zxing-cpp 3.x does. Once a finder triple has placed the code, its three finders hold
/// both colours and nothing else (33 modules of one, 16 of the other each): Otsu's level over
/// their squares is the code's own, which a logo in the code's middle does not move (Otsu over
/// the whole code square split the logo from the modules).
///
/// Threading: stateless; call from any thread (the image must not be written meanwhile).
enum CodeLevel {
    /// The least difference (gray levels) between the mean of the finders' pixels below Otsu's
    /// level and of those above it for the level to count: a plain surface's sensor noise
    /// (σ 3) splits into halves about 5 levels apart, a printed code's modules 25 and more.
    static let minimumSpread = 12.0
    /// The most they may differ: a code printed or shown in full contrast (modules 150 and more
    /// levels apart) keeps its light modules above its surround's pull, and binarising it again
    /// only costs a read (in a frame of several codes, finders of different codes make triples).
    static let maximumSpread = 100.0

    /// Otsu's level over the squares of the finders centred at `centres` in the gray image
    /// `gray` (upright: the code's rows along x), `module` pixels a module; each square reaches
    /// 3 modules from its centre, inside the finder's outer ring. Pixels above it are light.
    /// Nil when a square lies outside the image or its classes' means lie under `minimumSpread` or
    /// over `maximumSpread` apart.
    static func level(_ gray: PixelBuffer, finders centres: [CGPoint], module: Double) -> Double? {
        guard gray.pixelFormat == .gray, module > 0, !centres.isEmpty else { return nil }
        var histogram = [Int](repeating: 0, count: 256)
        let reach = 3 * module
        let inside = withExtendedLifetime(gray) { () -> Bool in
            let p = gray.baseAddress.assumingMemoryBound(to: UInt8.self)
            for c in centres {
                let x0 = Int((c.x - reach).rounded()), x1 = Int((c.x + reach).rounded())
                let y0 = Int((c.y - reach).rounded()), y1 = Int((c.y + reach).rounded())
                guard x0 >= 0, y0 >= 0, x1 < gray.width, y1 < gray.height else { return false }
                for y in y0...y1 {
                    let row = p + y * gray.bytesPerRow
                    for x in x0...x1 { histogram[Int(row[x])] += 1 }
                }
            }
            return true
        }
        guard inside else { return nil }
        return otsu(histogram)
    }

    /// Otsu's level of a 256-bin histogram (the top of the dark class); nil when it is empty or
    /// its two classes' means lie under `minimumSpread` or over `maximumSpread` apart.
    static func otsu(_ histogram: [Int]) -> Double? {
        let total = histogram.reduce(0, +)
        guard total > 0 else { return nil }
        let sum = histogram.indices.reduce(0.0) { $0 + Double($1 * histogram[$1]) }
        var darkCount = 0, darkSum = 0.0
        var best: (variance: Double, level: Int, spread: Double)?
        for t in 0..<255 {
            darkCount += histogram[t]
            darkSum += Double(t * histogram[t])
            let lightCount = total - darkCount
            guard darkCount > 0, lightCount > 0 else { continue }
            let darkMean = darkSum / Double(darkCount), lightMean = (sum - darkSum) / Double(lightCount)
            let variance = Double(darkCount) * Double(lightCount) * (lightMean - darkMean) * (lightMean - darkMean)
            if best == nil || variance > best!.variance { best = (variance, t, lightMean - darkMean) }
        }
        guard let best, best.spread >= minimumSpread, best.spread <= maximumSpread else { return nil }
        return Double(best.level)
    }
}

extension ScanRun {
    /// Reads `upright` (a finder triple's area warped upright by `scanUpright`, mapped back to
    /// the frame by `back`; its scanner reads it) binarised at the code's own level (`CodeLevel`), its finders centred at
    /// `finders` with modules of `module` pixels; inverted too when `lightCentred` (a
    /// light-on-dark code). True when it read a new symbol.
    mutating func readAtCodeLevel(
        _ upright: PixelBuffer, finders: [CGPoint], module: Double, back: Homography, lightCentred: Bool
    ) throws(CaptureError) -> Bool {
        guard let level = CodeLevel.level(upright, finders: finders, module: module) else { return false }
        let binary = try CodeImaging.thresholded(upright, kind: Int32(CVB_THRESHOLD_FIXED), value: level)
        if try attempt(binary, back, rectified: true, upright: true) { return true }
        guard passes.inverted, lightCentred else { return false }
        return try attempt(try CodeImaging.inverted(binary), back, rectified: true, upright: true)
    }
}
