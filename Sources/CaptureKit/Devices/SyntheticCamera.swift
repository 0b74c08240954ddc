import Foundation

/// A declarative scene for a synthetic camera: a background and sprites (images, QR codes,
/// coloured blocks) moving at known speeds, rendered frame by frame on a deterministic clock
/// (frame `i` is at `i / frameRate` seconds). Tests read the ground truth from the scene.
///
/// Value type; thread-safe.
public struct SyntheticScene: Hashable, Sendable {
    /// What fills the frame behind the sprites.
    public enum Background: Hashable, Sendable {
        /// One colour (components 0…255).
        case color(red: UInt8, green: UInt8, blue: UInt8)
        /// Seeded Gaussian noise per channel, the same image on every frame.
        case noise(seed: UInt64, mean: Double, standardDeviation: Double)
        /// An image file scaled to the frame.
        case image(path: String)
        /// Eight vertical SMPTE-style colour bars.
        case colorBars
    }

    /// Something drawn over the background.
    public struct Sprite: Hashable, Sendable {
        /// What the sprite shows.
        public enum Content: Hashable, Sendable {
            /// An image file (a face photo, say), scaled to `size`.
            case image(path: String)
            /// A QR code of these bytes (error correction 0=L…3=H), quiet zone included, scaled to `size`.
            case qrCode(payload: [UInt8], correction: Int32)
            /// A solid block.
            case color(red: UInt8, green: UInt8, blue: UInt8)
        }
        public var content: Content
        /// Size in scene pixels.
        public var size: CaptureDevice.Dimensions
        /// Top-left corner, in scene pixels, at `appearsAt`.
        public var origin: CGPoint
        /// Movement in scene pixels per second (x to the right, y down).
        public var velocity: CGSize
        /// When the sprite enters (seconds on the scene clock).
        public var appearsAt: Double
        /// When it leaves (nil: never).
        public var disappearsAt: Double?
        /// Seconds after which the whole appearance (from `appearsAt` to `disappearsAt`, moving
        /// from `origin`) plays again, for ever (nil: once): a person passing every 30 s.
        public var repeatInterval: Double?

        public init(
            content: Content, size: CaptureDevice.Dimensions, origin: CGPoint, velocity: CGSize = .zero,
            appearsAt: Double = 0, disappearsAt: Double? = nil, repeatInterval: Double? = nil
        ) {
            self.content = content
            self.size = size
            self.origin = origin
            self.velocity = velocity
            self.appearsAt = appearsAt
            self.disappearsAt = disappearsAt
            self.repeatInterval = repeatInterval
        }

        /// An image sprite scaled so that `feature` (a rectangle in the image's own pixels, such as
        /// a face box) is `width` scene pixels wide with its centre at `centre`; also returns where
        /// the feature lands in the scene, the ground truth a detector is checked against.
        public static func image(
            path: String, imageSize: CaptureDevice.Dimensions, placing feature: CGRect, width: Double,
            centredAt centre: CGPoint
        ) -> (sprite: Sprite, feature: CGRect) {
            let k = width / Double(feature.width)
            let placed = CGRect(
                x: Double(centre.x) - width / 2, y: Double(centre.y) - Double(feature.height) * k / 2, width: width,
                height: Double(feature.height) * k)
            let sprite = Sprite(
                content: .image(path: path),
                size: .init(
                    width: Int((Double(imageSize.width) * k).rounded()), height: Int((Double(imageSize.height) * k).rounded())),
                origin: CGPoint(x: Double(placed.minX) - Double(feature.minX) * k, y: Double(placed.minY) - Double(feature.minY) * k))
            return (sprite, placed)
        }

        /// Where the sprite is at time `t` in scene pixels, or nil when it is not shown.
        public func rect(at time: Double) -> CGRect? {
            var t = time
            if let period = repeatInterval, period > 0, t >= appearsAt {
                t = appearsAt + (t - appearsAt).truncatingRemainder(dividingBy: period)
            }
            guard t >= appearsAt, disappearsAt.map({ t < $0 }) ?? true else { return nil }
            let dt = t - appearsAt
            return CGRect(
                x: origin.x + velocity.width * dt, y: origin.y + velocity.height * dt,
                width: CGFloat(size.width), height: CGFloat(size.height))
        }
    }

    /// The size sprites are positioned in; other sizes scale the whole scene.
    public var size: CaptureDevice.Dimensions
    /// Frames per second.
    public var frameRate: Double
    /// Number of frames before the camera ends (nil: endless).
    public var frameCount: Int?
    /// Background.
    public var background: Background
    /// Sprites, drawn in order (later ones on top).
    public var sprites: [Sprite]
    /// Further frame sizes the camera offers (the scene is scaled to them), so presets can be
    /// exercised without hardware.
    public var additionalSizes: [CaptureDevice.Dimensions]
    /// Changes of the whole frame's brightness (a light switched, auto exposure stepping), in
    /// time order: from each one's time on, every pixel is multiplied by its gain.
    public var lightChanges: [LightChange]
    /// Standard deviation of Gaussian noise added to every frame, different in each (a
    /// sensor's temporal noise, seeded by the frame's index); 0: none.
    public var sensorNoise: Double

    /// From `at` seconds on, the frame's brightness is multiplied by `gain` (the last change
    /// due is in force; gain 1 restores the scene).
    public struct LightChange: Hashable, Sendable {
        public var at: Double
        public var gain: Double
        public init(at: Double, gain: Double) {
            self.at = at
            self.gain = gain
        }
    }

    public init(
        size: CaptureDevice.Dimensions, frameRate: Double = 30, frameCount: Int? = nil,
        background: Background = .color(red: 40, green: 40, blue: 40), sprites: [Sprite] = [],
        additionalSizes: [CaptureDevice.Dimensions] = [], lightChanges: [LightChange] = [], sensorNoise: Double = 0
    ) {
        self.size = size
        self.frameRate = frameRate
        self.frameCount = frameCount
        self.background = background
        self.sprites = sprites
        self.additionalSizes = additionalSizes
        self.lightChanges = lightChanges
        self.sensorNoise = sensorNoise
    }

    /// The brightness gain in force at `t` (1 before the first light change).
    public func lightGain(at t: Double) -> Double {
        lightChanges.last { $0.at <= t }?.gain ?? 1
    }

    /// Scene time of frame `index`.
    public func time(ofFrame index: Int) -> Double { Double(index) / frameRate }

    /// Ground truth: each visible sprite's index and its rectangle in normalised device space
    /// (0…1, top-left origin), clipped to the frame. Sprites fully outside are omitted.
    public func visibleSprites(atFrame index: Int) -> [(sprite: Int, bounds: CGRect)] {
        let t = time(ofFrame: index)
        let frame = CGRect(x: 0, y: 0, width: CGFloat(size.width), height: CGFloat(size.height))
        return sprites.enumerated().compactMap { i, sprite in
            guard let r = sprite.rect(at: t) else { return nil }
            let clipped = r.intersection(frame)
            guard !clipped.isNull, clipped.width > 0, clipped.height > 0 else { return nil }
            return (
                i,
                CGRect(
                    x: clipped.minX / frame.width, y: clipped.minY / frame.height, width: clipped.width / frame.width,
                    height: clipped.height / frame.height)
            )
        }
    }
}

/// Renders a `SyntheticScene` as a camera (`CaptureDevice.DeviceType.synthetic`) with OpenCV
/// drawing calls (CaptureVision's `Imaging`: fills, blits, `cv::QRCodeEncoder`).
///
/// Threading: `open`/`nextFrame`/`close` on the capture thread only (FrameSource's rule).
public final class SyntheticCameraSource: FrameSource, @unchecked Sendable {
    // @unchecked: render state is touched only by the capture thread between open and close.

    /// The scene.
    public let scene: SyntheticScene
    public let formats: [CaptureDevice.Format]
    public let isLive = false
    public let pacing: FramePacing

    private var index = 0
    private var frameDuration: MediaTime
    private var background: PixelBuffer?
    private var spriteImages: [PixelBuffer?] = []
    private var scale = CGSize(width: 1, height: 1)
    private var pool: PixelBufferPool?

    /// Checks the scene (sizes, rate, and that every sprite and background image decodes).
    public init(scene: SyntheticScene, pacing: FramePacing = .realTime) throws(CaptureError) {
        guard scene.frameRate > 0, scene.size.width > 0, scene.size.height > 0 else {
            throw CaptureError(.invalidConfiguration, "a synthetic scene needs a positive size and frame rate")
        }
        self.scene = scene
        self.pacing = pacing
        frameDuration = MediaTime.frameDuration(framesPerSecond: scene.frameRate)
        var sizes = [scene.size]
        for s in scene.additionalSizes where !sizes.contains(s) { sizes.append(s) }
        formats = sizes.map {
            CaptureDevice.Format(
                mediaSubType: "SYNT", pixelFormat: .bgr, dimensions: $0,
                videoSupportedFrameRateRanges: [.init(framesPerSecond: scene.frameRate)])
        }
        // Fail now, not mid-stream, on a missing image.
        _ = try Self.renderSprites(scene.sprites)
        if case .image(let path) = scene.background { _ = try ImageFolderSource.decode(path) }
    }

    public func open(format: CaptureDevice.Format, frameDuration: MediaTime) throws(CaptureError) {
        index = 0
        self.frameDuration = frameDuration
        let w = format.dimensions.width
        let h = format.dimensions.height
        scale = CGSize(
            width: CGFloat(w) / CGFloat(scene.size.width), height: CGFloat(h) / CGFloat(scene.size.height))
        pool = PixelBufferPool(width: w, height: h, pixelFormat: .bgr)
        let bg = try PixelBuffer(width: w, height: h, pixelFormat: .bgr)
        try Self.drawBackground(scene.background, into: bg)
        background = bg
        spriteImages = try Self.renderSprites(scene.sprites)
    }

    public func nextFrame(isCancelled: @Sendable () -> Bool) throws(CaptureError) -> SourceFrame? {
        guard let background, let pool else { return nil }
        if let count = scene.frameCount, index >= count { return nil }
        let frame = try pool.makeBuffer()
        let failure = "rendering the synthetic scene failed"
        try Imaging.convert(background, into: frame, failure)
        let t = scene.time(ofFrame: index)
        for (sprite, image) in zip(scene.sprites, spriteImages) {
            guard let r = sprite.rect(at: t) else { continue }
            let x = Int((r.minX * scale.width).rounded(.down))
            let y = Int((r.minY * scale.height).rounded(.down))
            let w = Int((r.width * scale.width).rounded())
            let h = Int((r.height * scale.height).rounded())
            if let image {
                try Imaging.blit(image, into: frame, x: x, y: y, width: w, height: h, failure)
            } else if case .color(let red, let green, let blue) = sprite.content {
                try Imaging.fill(frame, x: x, y: y, width: w, height: h, red: red, green: green, blue: blue, failure)
            }
        }
        let gain = scene.lightGain(at: t)
        if gain != 1 { try Imaging.scale(frame, by: gain, failure) }
        if scene.sensorNoise > 0 {
            try Imaging.addNoise(frame, seed: 0x5EED + UInt64(index), standardDeviation: scene.sensorNoise, failure)
        }
        defer { index += 1 }
        return SourceFrame(
            pixelBuffer: frame, presentationTimeStamp: frameDuration.multiplied(by: Int64(index)),
            sequenceNumber: UInt64(index))
    }

    public func close() {
        background = nil
        spriteImages = []
    }

    private static func drawBackground(_ background: SyntheticScene.Background, into buffer: PixelBuffer) throws(CaptureError) {
        let failure = "drawing the synthetic background failed"
        switch background {
        case .color(let r, let g, let b):
            try Imaging.fill(buffer, red: r, green: g, blue: b, failure)
        case .noise(let seed, let mean, let sd):
            try Imaging.fillNoise(buffer, seed: seed, mean: mean, standardDeviation: sd, failure)
        case .image(let path):
            try Imaging.resize(try ImageFolderSource.decode(path), into: buffer, failure)
        case .colorBars:
            let bars: [(UInt8, UInt8, UInt8)] = [
                (192, 192, 192), (192, 192, 0), (0, 192, 192), (0, 192, 0), (192, 0, 192), (192, 0, 0), (0, 0, 192),
                (16, 16, 16),
            ]
            let w = buffer.width
            for (i, c) in bars.enumerated() {
                let x0 = i * w / bars.count
                let x1 = (i + 1) * w / bars.count
                try Imaging.fill(
                    buffer, x: x0, y: 0, width: x1 - x0, height: buffer.height, red: c.0, green: c.1, blue: c.2, failure)
            }
        }
    }

    private static func renderSprites(_ sprites: [SyntheticScene.Sprite]) throws(CaptureError) -> [PixelBuffer?] {
        var out: [PixelBuffer?] = []
        for sprite in sprites {
            switch sprite.content {
            case .image(let path):
                out.append(try ImageFolderSource.decode(path))
            case .qrCode(let payload, let correction):
                out.append(try QRCodeImage.make(payload: payload, correction: correction))
            case .color:
                out.append(nil)
            }
        }
        return out
    }
}

/// QR symbols drawn by OpenCV's `cv::QRCodeEncoder` (`Imaging.qrSymbol`), for synthetic scenes,
/// the demo clip and tests.
public enum QRCodeImage {
    /// A BGR image of the symbol, one pixel per module times `moduleSize`, quiet zone included.
    public static func make(
        payload: [UInt8], correction: Int32 = 1, version: Int32 = 0, moduleSize: Int = 1
    ) throws(CaptureError) -> PixelBuffer {
        let gray = try Imaging.qrSymbol(payload: payload, version: version, correction: correction)
        let bgr = try PixelBuffer(width: gray.width * moduleSize, height: gray.height * moduleSize, pixelFormat: .bgr)
        if moduleSize == 1 {
            try Imaging.convert(gray, into: bgr, "converting the QR code failed")
        } else {
            // Integer scaling keeps module edges sharp.
            for y in 0..<gray.height {
                for x in 0..<gray.width {
                    let v = gray.pixel(x: x, y: y)[0]
                    try Imaging.fill(
                        bgr, x: x * moduleSize, y: y * moduleSize, width: moduleSize, height: moduleSize, red: v, green: v,
                        blue: v, "scaling the QR code failed")
                }
            }
        }
        return bgr
    }
}
