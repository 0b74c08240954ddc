import CVBridge
import Foundation
import Synchronization

/// Finds what moves in a stream of gray frames, cheaply: the motion stage that decides when
/// faces and codes are worth looking for (`CaptureMetadataOutput.motionDetection`). Like the
/// other detectors it works without a session: feed it frames in order.
///
/// Per frame:
/// 1. The frame is reduced to a small image about `analysisWidth` pixels wide, by a whole
///    factor (`cv::resize`, INTER_AREA: each small pixel is the mean of a block; an even factor
///    in steps of 2), and smoothed
///    (`cv::GaussianBlur`, σ 1), so sensor noise and JPEG shimmer average out.
/// 2. Its brightness is matched to the background's: the gain is the median ratio of background
///    to frame over the watched pixels, so a light switching on or auto exposure stepping (every
///    pixel brighter by about one factor) is not motion, while a person covering less than half
///    of the frame does not move the median.
/// 3. Watched pixels (inside the region of interest, outside every mask) that differ from the
///    background by more than `threshold` are changed. Changed pixels are grouped in cells of
///    4×4 small pixels (a cell counts with two or more), cells are joined with their eight
///    neighbours into regions, and regions whose changed pixels cover less than `minimumArea`
///    of the frame are dropped.
/// 4. The background follows the frames as a running average whose learning rate comes from
///    a time constant (the per-frame rate is `1 − exp(−Δt / τ)`, so it does not depend on the
///    frame rate): `settleTime` for a small pixel that did not change since the previous frame
///    (the spot a person left, a person who stood still, a chair put down: such a change stops
///    being motion within about `settleTime` and leaves no lingering ghost), `adaptationTime`
///    for one that keeps changing (something moving over it stays motion).
///
/// A frame in which more than `globalChangeFraction` of the watched pixels changed even after
/// the brightness match is a global change (the camera was moved or bumped, a light of another
/// colour or direction came on): it reports no regions, and the background starts again from it.
///
/// Threading: thread-safe (the state is behind a Mutex); frames are expected one at a time, in
/// capture order, as the metadata output's motion thread sends them.
public final class MotionDetector: Sendable {
    /// What counts as motion. Value type; thread-safe.
    public struct Configuration: Sendable, Hashable {
        /// Smallest change of a small pixel's brightness (0…255, after the brightness match)
        /// that counts; 1…255.
        public var threshold: Int
        /// Smallest moving region, as a fraction of the frame's area (0…1; 0.001 is 0.1 %,
        /// about 30×30 pixels of a 1280×720 frame).
        public var minimumArea: Double
        /// Seconds of frame time for a lasting change to become background (the running
        /// average's time constant); > 0.
        public var adaptationTime: Double
        /// Rectangles in device space (0…1, top-left origin, the unrotated frame, like
        /// `rectOfInterest`) where motion is ignored: a tree, a road, a clock.
        public var masks: [CGRect]
        /// About how wide the small analysed image is, in pixels (the frame is divided by a
        /// whole factor, so a 1280-wide frame gives 320); 32…1024.
        public var analysisWidth: Int
        /// Fraction of the watched pixels that, changed at once after the brightness match,
        /// make a global change rather than motion (0…1).
        public var globalChangeFraction: Double
        /// Seconds of frame time for a change that has stopped changing to become background
        /// (the running average's time constant for small pixels unchanged since the previous
        /// frame); > 0.
        public var settleTime: Double

        /// Creates a configuration (defaults: threshold 25, minimum area 0.1 %, adaptation 3 s,
        /// no masks, 320 px wide, global change from 60 % of the watched pixels, settling 0.5 s).
        public init(
            threshold: Int = 25, minimumArea: Double = 0.001, adaptationTime: Double = 3, masks: [CGRect] = [],
            analysisWidth: Int = 320, globalChangeFraction: Double = 0.6, settleTime: Double = 0.5
        ) {
            self.settleTime = settleTime
            self.threshold = threshold
            self.minimumArea = minimumArea
            self.adaptationTime = adaptationTime
            self.masks = masks
            self.analysisWidth = analysisWidth
            self.globalChangeFraction = globalChangeFraction
        }

        /// Why the configuration cannot be used, or nil.
        public var problem: String? {
            if !(1...255).contains(threshold) { return "threshold must be 1…255 (got \(threshold))" }
            if !(minimumArea.isFinite && (0...1).contains(minimumArea)) { return "minimum area must be 0…1 of the frame (got \(minimumArea))" }
            if !(adaptationTime.isFinite && adaptationTime > 0) { return "adaptation time must be a positive number of seconds (got \(adaptationTime))" }
            if !(settleTime.isFinite && settleTime > 0) { return "settle time must be a positive number of seconds (got \(settleTime))" }
            if !(32...1024).contains(analysisWidth) { return "analysis width must be 32…1024 pixels (got \(analysisWidth))" }
            if !(globalChangeFraction.isFinite && (0...1).contains(globalChangeFraction)) {
                return "global change fraction must be 0…1 (got \(globalChangeFraction))"
            }
            if masks.count > Self.maximumMasks { return "at most \(Self.maximumMasks) masks (got \(masks.count))" }
            if let bad = masks.first(where: { !($0.minX.isFinite && $0.minY.isFinite && $0.width.isFinite && $0.height.isFinite) }) {
                return "mask \(bad) is not finite"
            }
            return nil
        }

        /// The most masks a configuration may hold (each is tested against every small pixel
        /// when the watched area is made).
        public static let maximumMasks = 64
    }

    /// What one frame showed. Value type; thread-safe.
    public struct Result: Sendable, Hashable {
        /// The moving regions in device space, largest first (at most `maximumRegions`).
        public var regions: [CGRect]
        /// Fraction of the watched pixels that changed (0…1), regions too small included.
        public var changedFraction: Double
        /// More than `globalChangeFraction` of the watched pixels changed: no regions are
        /// reported and the background started again from this frame.
        public var isGlobalChange: Bool
        /// The frame only set the background (the first frame, or the first after a change of
        /// size, region of interest or masks): nothing can be said about motion in it.
        public var isFirstFrame: Bool
        /// Gain applied to the frame to match the background's brightness (1: none).
        public var gain: Double

        /// Whether anything moved.
        public var hasMotion: Bool { !regions.isEmpty }

        /// Creates a result.
        public init(regions: [CGRect], changedFraction: Double, isGlobalChange: Bool, isFirstFrame: Bool, gain: Double = 1) {
            self.regions = regions
            self.changedFraction = changedFraction
            self.isGlobalChange = isGlobalChange
            self.isFirstFrame = isFirstFrame
            self.gain = gain
        }
    }

    /// The most regions a frame reports (the largest ones).
    public static let maximumRegions = 16

    private struct Layout: Equatable {
        var frameWidth: Int
        var frameHeight: Int
        var regionOfInterest: CGRect
        var masks: [CGRect]
        var analysisWidth: Int
    }

    private struct State: ~Copyable {
        var configuration: Configuration
        var layout: Layout?
        var small: PixelBuffer?
        /// Halvings on the way to `small` when the factor is even: OpenCV's area reduction by
        /// exactly 2 has a vector path that a reduction by 4 or 6 lacks (the same block means,
        /// rounded once more; figures in Docs/performance.md).
        var halves: [PixelBuffer] = []
        var width = 0
        var height = 0
        /// 1 where a small pixel is watched (inside the region of interest, outside the masks).
        var watched: [UInt8] = []
        var watchedCount = 0
        var background: [Float] = []
        /// The previous frame's small image, to tell pixels that keep changing from settled ones.
        var previous: [UInt8] = []
        var lastTime: Double?
        var counts = Counts()
    }
    private let state: Mutex<State>

    /// How many frames were looked at, and how many of them had motion or a global change.
    public struct Counts: Sendable, Hashable {
        public var frames = 0
        public var withMotion = 0
        public var globalChanges = 0
    }

    /// A detector with `configuration` (check `configuration.problem` first: an unusable one is
    /// refused by `process`).
    public init(configuration: Configuration = Configuration()) {
        state = Mutex(State(configuration: configuration))
    }

    /// The configuration in force; setting it forgets the background when the masks or the
    /// analysis width change.
    public var configuration: Configuration {
        get { state.withLock { $0.configuration } }
        set { state.withLock { $0.configuration = newValue } }
    }

    /// The frames seen so far.
    public var counts: Counts { state.withLock { $0.counts } }

    /// Forgets the background: the next frame starts it again (a new stream).
    public func reset() {
        state.withLock {
            $0.layout = nil
            $0.lastTime = nil
        }
    }

    /// Looks for motion in `gray` (an 8-bit gray frame) taken at `time` (seconds of frame
    /// time), inside `regionOfInterest` (device space) and outside the masks.
    ///
    /// The C calls are `cvb_image_resize` (`cv::resize`, INTER_AREA) and
    /// `cvb_image_gaussian_blur` (`cv::GaussianBlur`); the comparison and grouping are Swift.
    ///
    /// - Throws: `.invalidConfiguration` for an unusable configuration or a frame that is not
    ///   gray; `.conversionFailed` when OpenCV fails.
    public func process(
        _ gray: PixelBuffer, time: Double, regionOfInterest: CGRect = CGRect(x: 0, y: 0, width: 1, height: 1)
    ) throws(CaptureError) -> Result {
        guard gray.pixelFormat == .gray else {
            throw CaptureError(.invalidConfiguration, "motion detection needs a gray frame (got \(gray.pixelFormat))")
        }
        return try state.withLock { (s: inout State) throws(CaptureError) -> Result in
            if let problem = s.configuration.problem {
                throw CaptureError(.invalidConfiguration, "motion detection: \(problem)")
            }
            let layout = Layout(
                frameWidth: gray.width, frameHeight: gray.height, regionOfInterest: regionOfInterest,
                masks: s.configuration.masks, analysisWidth: s.configuration.analysisWidth)
            let fresh = s.layout != layout || s.small == nil
            if fresh { try Self.arrange(&s, layout) }
            guard let small = s.small else { return Result(regions: [], changedFraction: 0, isGlobalChange: false, isFirstFrame: true) }
            var reduced = gray
            for half in s.halves {
                try Imaging.resize(reduced, into: half, "halving a \(reduced.width)x\(reduced.height) frame for motion detection")
                reduced = half
            }
            try Imaging.resize(reduced, into: small, "reducing a \(gray.width)x\(gray.height) frame for motion detection")
            try bridgeCall(.conversionFailed, "smoothing the motion detection image") { err in
                small.withBridgeImage { image in
                    var source = image  // the same pixels: GaussianBlur works in place
                    return cvb_image_gaussian_blur(&source, &image, 1.0, &err)
                }
            }
            s.counts.frames += 1
            let dt = s.lastTime.map { time - $0 } ?? 0
            s.lastTime = time
            if fresh || dt < 0 {
                // A new background (or time went backwards: a new stream).
                Self.setBackground(&s, from: small)
                return Result(regions: [], changedFraction: 0, isGlobalChange: false, isFirstFrame: true)
            }
            return Self.compare(&s, small, dt: dt)
        }
    }

    // MARK: Inside (the state's lock held)

    /// Sizes the small image and the watched area for `layout`.
    private static func arrange(_ s: inout State, _ layout: Layout) throws(CaptureError) {
        let factor = max(1, Int((Double(layout.frameWidth) / Double(layout.analysisWidth)).rounded(.up)))
        let w = max(1, layout.frameWidth / factor)
        let h = max(1, layout.frameHeight / factor)
        s.small = try PixelBuffer(width: w, height: h, pixelFormat: .gray)
        // Halve while the rest of the factor stays even and the image halves exactly; the last
        // step (by 2 or by what is left) writes the small image.
        var halves: [PixelBuffer] = []
        var rest = factor, cw = layout.frameWidth, ch = layout.frameHeight
        while rest % 2 == 0 && rest > 2 && cw % 2 == 0 && ch % 2 == 0 {
            cw /= 2
            ch /= 2
            rest /= 2
            halves.append(try PixelBuffer(width: cw, height: ch, pixelFormat: .gray))
        }
        s.halves = halves
        s.width = w
        s.height = h
        s.layout = layout
        // A small pixel is watched when its centre lies inside the region and outside every mask.
        var watched = [UInt8](repeating: 0, count: w * h)
        var count = 0
        let roi = layout.regionOfInterest.standardized
        let masks = layout.masks.map(\.standardized)
        for y in 0..<h {
            let cy = (Double(y) + 0.5) / Double(h)
            for x in 0..<w {
                let p = CGPoint(x: (Double(x) + 0.5) / Double(w), y: cy)
                if roi.contains(p) && !masks.contains(where: { $0.contains(p) }) {
                    watched[y * w + x] = 1
                    count += 1
                }
            }
        }
        s.watched = watched
        s.watchedCount = count
        s.background = [Float](repeating: 0, count: w * h)
        s.previous = [UInt8](repeating: 0, count: w * h)
    }

    private static func setBackground(_ s: inout State, from small: PixelBuffer) {
        let w = s.width, h = s.height, stride = small.bytesPerRow
        let base = small.baseAddress.assumingMemoryBound(to: UInt8.self)
        s.background.withUnsafeMutableBufferPointer { bg in
            s.previous.withUnsafeMutableBufferPointer { previous in
                for y in 0..<h {
                    let row = base + y * stride
                    for x in 0..<w {
                        bg[y * w + x] = Float(row[x])
                        previous[y * w + x] = row[x]
                    }
                }
            }
        }
    }

    /// Brightness-matched difference, regions, and the background's update.
    private static func compare(_ s: inout State, _ small: PixelBuffer, dt: Double) -> Result {
        let w = s.width, h = s.height, stride = small.bytesPerRow
        let base = UnsafePointer(small.baseAddress.assumingMemoryBound(to: UInt8.self))
        let configuration = s.configuration
        guard s.watchedCount > 0 else {
            updateBackground(&s, base, stride: stride, dt: dt)
            return Result(regions: [], changedFraction: 0, isGlobalChange: false, isFirstFrame: false)
        }
        let gain = Double(medianGain(s, base, stride: stride))
        let threshold = Float(configuration.threshold)
        let g = Float(gain)
        // Changed pixels per 4×4 cell.
        let cellsWide = (w + 3) / 4, cellsHigh = (h + 3) / 4
        var cells = [Int32](repeating: 0, count: cellsWide * cellsHigh)
        var changed = 0
        s.background.withUnsafeBufferPointer { bg in
            s.watched.withUnsafeBufferPointer { watched in
                cells.withUnsafeMutableBufferPointer { cells in
                    for y in 0..<h {
                        let row = base + y * stride
                        let cellRow = (y >> 2) * cellsWide
                        for x in 0..<w where watched[y * w + x] != 0 {
                            if abs(Float(row[x]) * g - bg[y * w + x]) > threshold {
                                changed += 1
                                cells[cellRow + (x >> 2)] += 1
                            }
                        }
                    }
                }
            }
        }
        let fraction = Double(changed) / Double(s.watchedCount)
        if fraction > configuration.globalChangeFraction {
            s.counts.globalChanges += 1
            setBackground(&s, from: small)
            return Result(regions: [], changedFraction: fraction, isGlobalChange: true, isFirstFrame: false, gain: gain)
        }
        let minimumPixels = configuration.minimumArea * Double(w * h)
        let regions = self.regions(cells, cellsWide: cellsWide, cellsHigh: cellsHigh, width: w, height: h, minimumPixels: minimumPixels)
        updateBackground(&s, base, stride: stride, dt: dt)
        if !regions.isEmpty { s.counts.withMotion += 1 }
        return Result(regions: regions, changedFraction: fraction, isGlobalChange: false, isFirstFrame: false, gain: gain)
    }

    /// The median of background ÷ frame over watched pixels bright enough to divide by (both
    /// at least 16), in steps of 1/64 from 1/4 to 4; 1 when too few pixels qualify (a dark scene).
    private static func medianGain(_ s: borrowing State, _ base: UnsafePointer<UInt8>, stride: Int) -> Float {
        let w = s.width, h = s.height
        var histogram = [Int32](repeating: 0, count: 257)
        var samples = 0
        s.background.withUnsafeBufferPointer { bg in
            s.watched.withUnsafeBufferPointer { watched in
                histogram.withUnsafeMutableBufferPointer { histogram in
                    // Every other row and column: a quarter of the pixels give the same median.
                    for y in Swift.stride(from: 0, to: h, by: 2) {
                        let row = base + y * stride
                        for x in Swift.stride(from: 0, to: w, by: 2) where watched[y * w + x] != 0 {
                            let f = Float(row[x]), b = bg[y * w + x]
                            guard f >= 16, b >= 16 else { continue }
                            let bin = Int(min(256, max(16, (b / f) * 64)))
                            histogram[bin] += 1
                            samples += 1
                        }
                    }
                }
            }
        }
        guard samples >= 64 else { return 1 }
        var seen: Int32 = 0
        let half = Int32(samples / 2)
        for (bin, n) in histogram.enumerated() {
            seen += n
            if seen > half { return (Float(bin) + 0.5) / 64 }  // the bin's middle
        }
        return 1
    }

    /// Cells with two or more changed pixels, joined with their eight neighbours; each region's
    /// box in device space, kept when its changed pixels reach `minimumPixels`.
    private static func regions(
        _ cells: [Int32], cellsWide: Int, cellsHigh: Int, width: Int, height: Int, minimumPixels: Double
    ) -> [CGRect] {
        var label = [Int32](repeating: -1, count: cells.count)
        var found: [(box: CGRect, pixels: Int)] = []
        var stack: [Int] = []
        for start in cells.indices where cells[start] >= 2 && label[start] < 0 {
            let id = Int32(found.count)
            var x0 = Int.max, y0 = Int.max, x1 = Int.min, y1 = Int.min
            var pixels = 0
            label[start] = id
            stack.append(start)
            while let c = stack.popLast() {
                let cx = c % cellsWide, cy = c / cellsWide
                x0 = min(x0, cx)
                x1 = max(x1, cx)
                y0 = min(y0, cy)
                y1 = max(y1, cy)
                pixels += Int(cells[c])
                for ny in max(0, cy - 1)...min(cellsHigh - 1, cy + 1) {
                    for nx in max(0, cx - 1)...min(cellsWide - 1, cx + 1) {
                        let n = ny * cellsWide + nx
                        if cells[n] >= 2 && label[n] < 0 {
                            label[n] = id
                            stack.append(n)
                        }
                    }
                }
            }
            let px0 = x0 * 4, py0 = y0 * 4
            let px1 = min(width, (x1 + 1) * 4), py1 = min(height, (y1 + 1) * 4)
            let box = CGRect(
                x: Double(px0) / Double(width), y: Double(py0) / Double(height), width: Double(px1 - px0) / Double(width),
                height: Double(py1 - py0) / Double(height))
            found.append((box, pixels))
        }
        return
            found
            .filter { Double($0.pixels) >= max(1, minimumPixels) }
            .sorted { $0.pixels > $1.pixels }
            .prefix(maximumRegions)
            .map(\.box)
    }

    /// `background += α (frame − background)` with `α = 1 − exp(−dt / τ)`: τ is `settleTime`
    /// where the small pixel moved by at most half the threshold since the previous frame,
    /// `adaptationTime` elsewhere.
    private static func updateBackground(_ s: inout State, _ base: UnsafePointer<UInt8>, stride: Int, dt: Double) {
        let step = max(0, min(dt, 10))
        let alpha = Float(1 - exp(-step / s.configuration.adaptationTime))
        let settle = Float(1 - exp(-step / s.configuration.settleTime))
        let steady = Int(s.configuration.threshold / 2)
        let w = s.width, h = s.height
        s.background.withUnsafeMutableBufferPointer { bg in
            s.previous.withUnsafeMutableBufferPointer { previous in
                for y in 0..<h {
                    let row = base + y * stride
                    for x in 0..<w {
                        let i = y * w + x
                        let value = row[x]
                        let rate = abs(Int(value) - Int(previous[i])) <= steady ? settle : alpha
                        bg[i] += rate * (Float(value) - bg[i])
                        previous[i] = value
                    }
                }
            }
        }
    }
}
