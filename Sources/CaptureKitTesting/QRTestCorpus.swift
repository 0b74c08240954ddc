import CaptureKit
import CaptureVision
import Foundation

/// A deterministic, seeded set of synthetic frames with QR codes, each knowing the payloads it
/// holds, for the code detector's tests and for `bench-codes`. Codes are drawn by OpenCV's
/// `cv::QRCodeEncoder` (`QRCodeImage`), placed with a perspective warp
/// (`CodeImaging.warp`, `cv::warpPerspective`) on a cluttered background, then degraded per
/// category (`CodeImaging`'s blur, noise and contrast scaling).
///
/// Part of CaptureKitTesting, not CaptureKit: a test corpus is for tests and benchmarks (an
/// app can check its own code reading against it), and the library never calls into it.
///
/// Threading: value types; generation is pure and may run on any thread.
public enum QRTestCorpus {
    /// What makes a sample hard.
    public enum Category: String, CaseIterable, Sendable, CustomStringConvertible {
        /// Upright, sharp, module size 3–8 px, versions 1–20, all correction levels, 640×480.
        case plain
        /// Module size 2 px in 1920×1080 frames.
        case small
        /// Rotated by any angle.
        case rotated
        /// Seen at an angle: a random perspective quadrilateral.
        case perspective
        /// Gaussian blur of 0.35–0.7 modules.
        case blurred
        /// Gaussian sensor noise, standard deviation 25–45 levels.
        case noisy
        /// 25–50 grey levels between dark and light modules.
        case lowContrast
        /// Light modules on a dark ground.
        case inverted
        /// Two to four codes in one frame.
        case multiple
        /// Payloads that are not UTF-8: ISO-8859-1 text, Shift-JIS text, raw bytes.
        case nonUTF8
        /// Mixed conditions in 1920×1080 frames.
        case large
        /// Tilted 30–50° away from the camera about a horizontal or vertical axis (foreshortened,
        /// edges converging), module size 3–6 px, 640×480.
        case tilted
        /// Versions 25–40 filling most of a 640×480 frame, upright (modules 2.2–3 px).
        case highVersion
        /// Versions 25–40 in 1920×1080 frames, upright, module size 2.5–5 px.
        case highVersionLarge

        public var description: String { rawValue }
    }

    /// One generated frame.
    public struct Sample: Sendable {
        /// A stable name, e.g. "rotated-3".
        public var name: String
        public var category: Category
        /// The BGR frame.
        public var image: PixelBuffer
        /// Every code in the frame, in drawing order.
        public var codes: [Code]

        /// The payloads the frame holds.
        public var expectedPayloads: [[UInt8]] { codes.map(\.payload) }
    }

    /// One code drawn into a sample.
    public struct Code: Sendable {
        /// The exact bytes encoded.
        public var payload: [UInt8]
        /// QR version (1–40) and correction level (0=L … 3=H).
        public var version: Int
        public var correction: Int
        /// Module size in frame pixels (before any perspective).
        public var moduleSize: Double
        /// The symbol's corners in frame pixels (quiet zone excluded), clockwise from the
        /// upright symbol's top-left finder pattern.
        public var corners: [CGPoint]
    }

    /// Byte-mode capacity of QR versions 1–20 for correction L, M, Q, H (ISO/IEC 18004 table 7).
    static let byteCapacity: [[Int]] = [
        [17, 32, 53, 78, 106, 134, 154, 192, 230, 271, 321, 367, 425, 458, 520, 586, 644, 718, 792, 858],
        [14, 26, 42, 62, 84, 106, 122, 152, 180, 213, 251, 287, 331, 362, 412, 450, 504, 560, 624, 666],
        [11, 20, 32, 46, 60, 74, 86, 108, 130, 151, 177, 203, 241, 258, 292, 322, 364, 394, 442, 482],
        [7, 14, 24, 34, 44, 58, 64, 84, 98, 119, 137, 155, 177, 194, 220, 250, 280, 310, 338, 382],
    ]

    /// `count` samples of `category`, the same for the same `seed`.
    public static func samples(_ category: Category, count: Int, seed: UInt64 = 1) throws(CaptureError) -> [Sample] {
        var out: [Sample] = []
        for i in 0..<count {
            var rng = SplitMix64(seed: seed &* 0x9E37_79B9 &+ UInt64(i) &* 7919 &+ UInt64(category.hashSeed))
            out.append(try makeSample(category, index: i, rng: &rng))
        }
        return out
    }

    /// A QR code of `version`, `module` px per module, turned by `degrees` in the middle of a
    /// light 640×480 GRAY frame with a camera's sensor noise (σ 3), and its payload
    /// ("cvcam VERSION MODULE DEGREES"): any cue there is the code's or the noise's
    /// (package-internal: `ReadCodeCueTests` and `bench-codes --small-turned`).
    package static func turnedCode(
        version: Int32, module: Int, degrees: Double, seed: UInt64
    ) throws(CaptureError) -> (frame: PixelBuffer, payload: [UInt8]) {
        let payload = Array("cvcam \(version) \(module) \(degrees)".utf8)
        let symbol = try CodeImaging.gray(try QRCodeImage.make(payload: payload, version: version, moduleSize: module))
        let frame = try PixelBuffer(width: 640, height: 480, pixelFormat: .gray)
        try Imaging.fill(frame, x: 0, y: 0, width: 640, height: 480, red: 235, green: 235, blue: 235, "test frame")
        let (from, to) = Placement.turned(
            CGRect(x: 0, y: 0, width: symbol.width, height: symbol.height), scale: 1, degrees: degrees,
            centre: CGPoint(x: 320, y: 240))
        try CodeImaging.warp(symbol, into: frame, homography: try CodeImaging.homography(from: from, to: to))
        try CodeImaging.addNoise(frame, seed: seed, standardDeviation: 3)
        return (frame, payload)
    }

    /// The frames of `bench-codes --small-turned` and `SmallFinderTests`: `turnedCode` at 2 px
    /// per module, versions 2–10 turned 3–30° (48 frames), each named "vVERSION DEGREES°".
    package static func smallTurnedCodes() throws(CaptureError) -> [(name: String, frame: PixelBuffer, payload: [UInt8])] {
        var out: [(name: String, frame: PixelBuffer, payload: [UInt8])] = []
        for version: Int32 in [2, 3, 4, 5, 6, 7, 8, 10] {
            for angle: Double in [3, 5, 8, 12, 20, 30] {
                let (frame, payload) = try turnedCode(
                    version: version, module: 2, degrees: angle, seed: UInt64(version) * 100 + UInt64(angle))
                out.append(("v\(version) \(Int(angle))°", frame, payload))
            }
        }
        return out
    }

    /// Faint QR codes (modules 40 levels apart: 60 and 100) whose quiet zone, two modules wide,
    /// gives onto a bright surround (235), as a sticker's white frame or a lit wall does, with a
    /// camera's sensor noise (σ 3): versions 2, 4 and 7, modules of 3, 5 and 8 px, dark-on-light
    /// and light-on-dark, turned 0° and 6°, in 640x480 frames; versions 2 and 4 also in frames
    /// under the detector's gate size (3- and 5-px modules in 320x240, 8-px in 352x352): 60
    /// frames, each named "vVERSION MODULEpx POLARITY DEGREES° WIDTHxHEIGHT" (package-internal:
    /// `CodeLevelTests` and `bench-codes --framed-faint`).
    package static func framedFaintCodes() throws(CaptureError) -> [(name: String, frame: PixelBuffer, payload: [UInt8])] {
        var out: [(name: String, frame: PixelBuffer, payload: [UInt8])] = []
        let dark = 60.0, light = 100.0
        for (width, height) in [(640, 480), (320, 240), (352, 352)] {
            for version: Int32 in [2, 4, 7] {
                for module in [3, 5, 8] {
                    // The smaller frames hold versions 2 and 4: 320x240 those of 3- and 5-px
                    // modules, 352x352 those of 8 px.
                    if width < 640 && (version == 7 || (module == 8) != (width == 352)) { continue }
                    for inverted in [false, true] {
                        for degrees in [0.0, 6] {
                            let payload = Array("cvcam framed \(version) \(module)".utf8)
                            let symbol = try CodeImaging.gray(try QRCodeImage.make(payload: payload, version: version, moduleSize: module))
                            // Black modules at 0 become `dark` (or `light` when inverted), white ones the other.
                            let faint = inverted
                                ? try CodeImaging.scaled(symbol, alpha: (dark - light) / 255, beta: light)
                                : try CodeImaging.scaled(symbol, alpha: (light - dark) / 255, beta: dark)
                            let frame = try PixelBuffer(width: width, height: height, pixelFormat: .gray)
                            try Imaging.fill(frame, x: 0, y: 0, width: width, height: height, red: 235, green: 235, blue: 235, "test frame")
                            // The encoder's quiet zone is 4 modules; 2 of them stay.
                            let cut = Double(2 * module)
                            let (from, to) = Placement.turned(
                                CGRect(x: cut, y: cut, width: Double(symbol.width) - 2 * cut, height: Double(symbol.height) - 2 * cut),
                                scale: 1, degrees: degrees, centre: CGPoint(x: Double(width) / 2, y: Double(height) / 2))
                            try CodeImaging.warp(faint, into: frame, homography: try CodeImaging.homography(from: from, to: to))
                            try CodeImaging.addNoise(frame, seed: UInt64(out.count) + 1, standardDeviation: 3)
                            let name = "v\(version) \(module)px \(inverted ? "light-on-dark" : "dark-on-light") \(Int(degrees))° \(width)x\(height)"
                            out.append((name, frame, payload))
                        }
                    }
                }
            }
        }
        return out
    }

    /// A cluttered code-free frame (blurred noise, blocks, gradients), for false-decode checks.
    public static func background(width: Int, height: Int, seed: UInt64) throws(CaptureError) -> PixelBuffer {
        var rng = SplitMix64(seed: seed)
        return try makeBackground(width: width, height: height, rng: &rng)
    }

    /// An image file as a BGR frame, resized when a size is given (`cv::imread`,
    /// `cv::resize`): code-free photos for false-decode checks and timing.
    public static func photo(at path: String, width: Int? = nil, height: Int? = nil) throws(CaptureError)
        -> PixelBuffer
    {
        let image = try ImageFolderSource.decode(path)
        guard let width, let height else { return image }
        return try CodeImaging.resized(image, width: width, height: height, interpolation: Interpolation.linear)
    }

    /// `frame` resized to width×height (`cv::resize`, bilinear or area).
    public static func resized(_ frame: PixelBuffer, width: Int, height: Int) throws(CaptureError) -> PixelBuffer {
        let shrinking = width < frame.width || height < frame.height
        return try CodeImaging.resized(
            frame, width: width, height: height, interpolation: shrinking ? Interpolation.area : Interpolation.linear)
    }

    // MARK: - Generation

    private static func makeSample(_ category: Category, index: Int, rng: inout SplitMix64) throws(CaptureError)
        -> Sample
    {
        let large = category == .small || category == .large || category == .highVersionLarge
        let (w, h) = large ? (1920, 1080) : (640, 480)
        let frame = try makeBackground(width: w, height: h, rng: &rng)
        let count = category == .multiple ? 2 + rng.int(3) : 1
        var codes: [Code] = []
        var occupied: [CGRect] = []
        for k in 0..<count {
            let payload = makePayload(category, index: index * 8 + k, rng: &rng)
            var placed: Code?
            for _ in 0..<200 where placed == nil {
                placed = try place(
                    payload: payload, category: category, in: frame, avoiding: occupied, codesInFrame: count, rng: &rng)
            }
            guard let code = placed else { continue }
            codes.append(code)
            occupied.append(DeviceSpace.boundingBox(of: code.corners).insetBy(dx: -code.moduleSize * 6, dy: -code.moduleSize * 6))
        }
        switch category {
        case .blurred:
            let m = codes.first?.moduleSize ?? 4
            let blurred = try CodeImaging.blurred(frame, sigma: m * rng.double(0.35, 0.7))
            try copy(blurred, into: frame)
        case .noisy:
            try CodeImaging.addNoise(frame, seed: rng.next(), standardDeviation: rng.double(25, 45))
        case .large:
            if rng.int(2) == 0 { try CodeImaging.addNoise(frame, seed: rng.next(), standardDeviation: rng.double(5, 20)) }
        default:
            // Every frame gets a little sensor noise, like a camera.
            try CodeImaging.addNoise(frame, seed: rng.next(), standardDeviation: 3)
        }
        return Sample(name: "\(category)-\(index)", category: category, image: frame, codes: codes)
    }

    /// Draws one code with the category's geometry; nil when it would overlap another code.
    private static func place(
        payload: [UInt8], category: Category, in frame: PixelBuffer, avoiding occupied: [CGRect], codesInFrame: Int,
        rng: inout SplitMix64
    ) throws(CaptureError) -> Code? {
        let correction = rng.int(4)
        let minimumVersion = (byteCapacity[correction].firstIndex { $0 >= payload.count } ?? 19) + 1
        let maxVersion = category == .small ? 6 : (codesInFrame > 1 ? 8 : 20)
        var version = max(minimumVersion, min(maxVersion, minimumVersion + rng.int(3)))
        if category == .highVersion || category == .highVersionLarge { version = max(version, 25 + rng.int(16)) }
        // OpenCV's encoder counts capacity a little differently from the table: step up until it fits.
        var encoded: PixelBuffer?
        while encoded == nil && version <= 40 {
            encoded = try? QRCodeImage.make(payload: payload, correction: Int32(correction), version: Int32(version))
            if encoded == nil { version += 1 }
        }
        guard let symbol = encoded else {
            throw CaptureError(.invalidConfiguration, "OpenCV cannot encode a \(payload.count)-byte QR code")
        }
        let modules = 17 + 4 * version
        let quiet = Double(symbol.width - modules) / 2
        let fw = Double(frame.width), fh = Double(frame.height)
        var module: Double
        switch category {
        case .small: module = 2
        case .plain, .inverted, .nonUTF8: module = Double(3 + rng.int(6))
        case .multiple: module = rng.double(2.5, 4.5)  // small enough for up to four per frame
        case .tilted: module = rng.double(3, 6)
        case .highVersion: module = 3  // shrunk below to fit the frame
        case .highVersionLarge: module = rng.double(2.5, 5)
        default: module = rng.double(3, 7)
        }
        // Shrink until the code and its quiet zone fit in the frame with room to spare.
        let limit = min(fw, fh) * (codesInFrame > 1 ? 0.45 : 0.85)
        module = min(module, limit / Double(modules + 8))
        if module < 2 { module = 2 }
        let side = Double(modules) * module
        let angle: Double
        switch category {
        case .rotated: angle = rng.double(0, 2 * .pi)
        case .large, .multiple: angle = rng.double(-0.3, 0.3)
        default: angle = 0
        }
        // How far the code and its quiet zone reach from the centre: a turned square up to half
        // its diagonal (0.71 of the side; 0.75 leaves room for perspective). The high-version
        // categories are upright and unwarped: half the side; with the turned square's reach a
        // version 25–40 code never fitted a 640x480 frame, and that category held no code.
        let upright = category == .highVersion || category == .highVersionLarge
        let reach = side * (upright ? 0.5 : 0.75) + module * 4
        guard fw > 2 * reach, fh > 2 * reach else { return nil }
        let center = CGPoint(x: rng.double(reach, fw - reach), y: rng.double(reach, fh - reach))
        // Corners of the symbol (quiet zone excluded), clockwise from the top-left.
        var corners = [CGPoint(x: -0.5, y: -0.5), CGPoint(x: 0.5, y: -0.5), CGPoint(x: 0.5, y: 0.5), CGPoint(x: -0.5, y: 0.5)]
            .map { p -> CGPoint in
                let x = Double(p.x) * side, y = Double(p.y) * side
                return CGPoint(
                    x: Double(center.x) + x * cos(angle) - y * sin(angle),
                    y: Double(center.y) + x * sin(angle) + y * cos(angle))
            }
        if category == .perspective || category == .large {
            // Pull two neighbouring corners in: the code is seen from an angle (up to ~45°).
            let edge = rng.int(4)
            let squeeze = category == .perspective ? rng.double(0.15, 0.35) : rng.double(0, 0.15)
            let a = edge, b = (edge + 1) % 4, c = (edge + 2) % 4, d = (edge + 3) % 4
            corners[a] = lerp(corners[a], corners[d], squeeze / 2)
            corners[b] = lerp(corners[b], corners[c], squeeze / 2)
            let shorten = rng.double(0, squeeze)
            corners[a] = lerp(corners[a], corners[b], shorten / 2)
            corners[b] = lerp(corners[b], corners[a], shorten / 2)
        }
        if category == .tilted {
            // Turn the square about its horizontal or vertical centre line by 30–50° and project
            // it with a focal length of the frame's width: one edge shrinks, the others converge.
            let tilt = rng.double(30, 50) * .pi / 180, aboutHorizontal = rng.int(2) == 0, away = rng.int(2) == 0
            let focal = fw
            corners = corners.map { p -> CGPoint in
                var u = Double(p.x) - Double(center.x), v = Double(p.y) - Double(center.y)
                let depth: Double
                if aboutHorizontal {
                    depth = (away ? 1 : -1) * v * sin(tilt)
                    v *= cos(tilt)
                } else {
                    depth = (away ? 1 : -1) * u * sin(tilt)
                    u *= cos(tilt)
                }
                let k = focal / (focal + depth)
                return CGPoint(x: Double(center.x) + u * k, y: Double(center.y) + v * k)
            }
        }
        let box = DeviceSpace.boundingBox(of: corners).insetBy(dx: -module * 5, dy: -module * 5)
        guard !occupied.contains(where: { $0.intersects(box) }) else { return nil }

        var gray = try CodeImaging.gray(symbol)
        switch category {
        case .inverted: gray = try CodeImaging.inverted(gray)
        case .lowContrast:
            let dark = rng.double(70, 140), spread = rng.double(25, 50)
            gray = try CodeImaging.scaled(gray, alpha: spread / 255, beta: dark)
        default: break
        }
        let src = try convert(gray, to: .bgr)
        let sw = Double(symbol.width)
        let symbolCorners = [
            CGPoint(x: quiet, y: quiet), CGPoint(x: sw - quiet, y: quiet), CGPoint(x: sw - quiet, y: sw - quiet),
            CGPoint(x: quiet, y: sw - quiet),
        ]
        let h = try CodeImaging.homography(from: symbolCorners, to: corners)
        let interpolation = angle == 0 && category != .perspective && category != .tilted ? Interpolation.nearest : Interpolation.linear
        try CodeImaging.warp(src, into: frame, homography: h, interpolation: interpolation)
        return Code(payload: payload, version: version, correction: correction, moduleSize: module, corners: corners)
    }

    private static func makePayload(_ category: Category, index: Int, rng: inout SplitMix64) -> [UInt8] {
        if category == .nonUTF8 {
            switch index % 3 {
            case 0:
                // ISO-8859-1 text.
                let words = ["Café", "Grüße aus Köln", "Señor Núñez", "Ærø Å", "crème brûlée", "Zürich Straße"]
                return words[rng.int(words.count)].unicodeScalars.map { UInt8($0.value) } + Array(" #\(index)".utf8)
            case 1:
                // Shift-JIS text: 日本語テキスト / こんにちは, then ASCII.
                let texts: [[UInt8]] = [
                    [0x93, 0xFA, 0x96, 0x7B, 0x8C, 0xEA, 0x83, 0x65, 0x83, 0x4C, 0x83, 0x58, 0x83, 0x67],
                    [0x82, 0xB1, 0x82, 0xF1, 0x82, 0xC9, 0x82, 0xBF, 0x82, 0xCD],
                ]
                return texts[rng.int(texts.count)] + Array(" \(index)".utf8)
            default:
                // Raw bytes with controls and invalid UTF-8.
                var bytes: [UInt8] = [0x00, 0xFF, 0x80, 0x01]
                for _ in 0..<(8 + rng.int(40)) { bytes.append(UInt8(truncatingIfNeeded: rng.next())) }
                return bytes
            }
        }
        let maxLength = category == .small ? 40 : (category == .multiple ? 60 : 200)
        let length = 4 + rng.int(maxLength)
        let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./?=&".utf8)
        var text = Array("https://cvcam.example/\(category)/\(index)?".utf8)
        while text.count < length { text.append(alphabet[rng.int(alphabet.count)]) }
        if index % 5 == 4 { text += Array(" – ünïcödé ✓".utf8) }
        return text
    }

    private static func makeBackground(width: Int, height: Int, rng: inout SplitMix64) throws(CaptureError)
        -> PixelBuffer
    {
        let frame = try PixelBuffer(width: width, height: height, pixelFormat: .bgr)
        let seed = rng.next(), mean = rng.double(90, 170)
        try Imaging.fillNoise(frame, seed: seed, mean: mean, standardDeviation: 50, "drawing a background failed")
        try copy(try CodeImaging.blurred(frame, sigma: rng.double(4, 12)), into: frame)
        for _ in 0..<(6 + rng.int(10)) {
            let w = 20 + rng.int(width / 4), h = 20 + rng.int(height / 4)
            let v = UInt8(rng.int(256)), g = UInt8(rng.int(256)), b = UInt8(rng.int(256))
            let x = rng.int(width), y = rng.int(height)
            try Imaging.fill(frame, x: x, y: y, width: w, height: h, red: v, green: g, blue: b, "drawing a background failed")
        }
        try copy(try CodeImaging.blurred(frame, sigma: 1.5), into: frame)
        return frame
    }

    private static func copy(_ source: PixelBuffer, into destination: PixelBuffer) throws(CaptureError) {
        try Imaging.convert(source, into: destination, "copying a frame failed")
    }

    private static func convert(_ source: PixelBuffer, to format: PixelFormat) throws(CaptureError) -> PixelBuffer {
        let out = try PixelBuffer(width: source.width, height: source.height, pixelFormat: format)
        try copy(source, into: out)
        return out
    }

    private static func lerp(_ a: CGPoint, _ b: CGPoint, _ t: Double) -> CGPoint {
        CGPoint(x: Double(a.x) + (Double(b.x) - Double(a.x)) * t, y: Double(a.y) + (Double(b.y) - Double(a.y)) * t)
    }
}

extension QRTestCorpus.Category {
    fileprivate var hashSeed: Int { Self.allCases.firstIndex(of: self)! &* 104_729 }
}
