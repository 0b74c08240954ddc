import CVBridge
import Synchronization

/// Pixel memory for one frame, like Core Video's `CVPixelBuffer`.
///
/// Memory is either an OpenCV matrix from CVBridge (`cvb_mat_create`, `cvb_image_read`),
/// optionally recycled through a `PixelBufferPool`, or memory owned by someone else (a V4L2
/// mmap buffer) released by a closure when the last reference goes away.
///
/// Threading: a buffer is filled by its producer before it is published in a `SampleBuffer`;
/// after that it is read-only and may be read from any thread.
public final class PixelBuffer: @unchecked Sendable {
    // @unchecked: the stored properties are immutable; the pixel memory is written only by the
    // producer before publication (the capture thread), then only read.

    /// Width in pixels.
    public let width: Int
    /// Height in pixels.
    public let height: Int
    /// Bytes from one row to the next (for NV12: of the luma plane).
    public let bytesPerRow: Int
    /// Layout of the pixels.
    public let pixelFormat: PixelFormat
    /// The first byte of the first row.
    public let baseAddress: UnsafeMutableRawPointer

    private enum Storage {
        case mat(OpaquePointer)
        case pooled(OpaquePointer, PixelBufferPool)
        case external(@Sendable () -> Void)
    }
    private let storage: Storage

    /// Allocates a tightly packed buffer (`cvb_mat_create`).
    public convenience init(width: Int, height: Int, pixelFormat: PixelFormat) throws(CaptureError) {
        var err = cvb_error()
        guard let mat = cvb_mat_create(Int32(width), Int32(height), pixelFormat.rawValue, &err) else {
            throw CaptureError(.outOfMemory, "cannot allocate a \(width)x\(height) \(pixelFormat) buffer", bridge: err)
        }
        self.init(ownedMat: mat)
    }

    /// Takes ownership of a CVBridge matrix (released when the buffer goes away, or handed back
    /// to `pool`); size and layout are the matrix's own (`cvb_mat_image`).
    init(ownedMat mat: OpaquePointer, pool: PixelBufferPool? = nil) {
        let image = cvb_mat_image(mat)
        width = Int(image.width)
        height = Int(image.height)
        bytesPerRow = Int(image.stride)
        // cvb_mat_image reports only cvb_pixel_format values, which PixelFormat mirrors.
        pixelFormat = PixelFormat(rawValue: image.format) ?? .gray
        baseAddress = UnsafeMutableRawPointer(image.data!)
        storage = pool.map { .pooled(mat, $0) } ?? .mat(mat)
    }

    /// Wraps memory owned elsewhere (for example a V4L2 mmap buffer); `release` runs once, when
    /// the last reference to the buffer goes away, on whichever thread drops it.
    public init(
        wrapping baseAddress: UnsafeMutableRawPointer, width: Int, height: Int, bytesPerRow: Int,
        pixelFormat: PixelFormat, release: @escaping @Sendable () -> Void
    ) {
        self.baseAddress = baseAddress
        self.width = width
        self.height = height
        self.bytesPerRow = bytesPerRow
        self.pixelFormat = pixelFormat
        storage = .external(release)
    }

    deinit {
        switch storage {
        case .mat(let mat): cvb_mat_release(mat)
        case .pooled(let mat, let pool): pool.recycle(mat)
        case .external(let release): release()
        }
    }

    /// Number of bytes the pixels span (rows × stride, plus NV12's chroma rows).
    public var byteCount: Int {
        pixelFormat == .nv12 ? bytesPerRow * height * 3 / 2 : bytesPerRow * height
    }

    /// Calls `body` with a CVBridge view of the pixels. The view holds a raw pointer and no
    /// reference, so it is valid only inside `body`, which keeps the buffer alive; use this
    /// rather than `bridgeImage` whenever the buffer is a temporary.
    package func withBridgeImage<R, E: Error>(_ body: (inout cvb_image) throws(E) -> R) throws(E) -> R {
        var image = bridgeImage
        defer { withExtendedLifetime(self) {} }
        return try body(&image)
    }

    /// The interpolation for scaling `width`×`height` pixels to `toWidth`×`toHeight`: area
    /// averaging when either side shrinks (no aliasing from skipped pixels), bilinear otherwise.
    package static func resizeInterpolation(width: Int, height: Int, toWidth: Int, toHeight: Int) -> Int32 {
        toWidth < width || toHeight < height ? Int32(CVB_INTER_AREA) : Int32(CVB_INTER_LINEAR)
    }

    /// `resizeInterpolation` for two bridge views.
    package static func resizeInterpolation(_ source: cvb_image, to destination: cvb_image) -> Int32 {
        resizeInterpolation(
            width: Int(source.width), height: Int(source.height), toWidth: Int(destination.width),
            toHeight: Int(destination.height))
    }

    /// `withBridgeImage` for a source and a destination.
    package static func withBridgeImages<R, E: Error>(
        _ source: PixelBuffer, _ destination: PixelBuffer, _ body: (inout cvb_image, inout cvb_image) throws(E) -> R
    ) throws(E) -> R {
        try source.withBridgeImage { (src) throws(E) -> R in
            try destination.withBridgeImage { (dst) throws(E) -> R in try body(&src, &dst) }
        }
    }

    /// A CVBridge view of the pixels. It does not keep the buffer alive: Swift may free a buffer
    /// after its last use, so a view of a temporary (`decode(path).bridgeImage`) would dangle;
    /// hence private, and every caller goes through `withBridgeImage`.
    private var bridgeImage: cvb_image {
        cvb_image(
            data: baseAddress.assumingMemoryBound(to: UInt8.self), width: Int32(width), height: Int32(height),
            stride: Int32(bytesPerRow), format: pixelFormat.rawValue)
    }

    /// The pixels copied row by row without padding.
    public func packedBytes() -> [UInt8] {
        let rowBytes = pixelFormat.packedBytesPerRow(width: width)
        let rows = pixelFormat == .nv12 ? height * 3 / 2 : height
        var out = [UInt8](repeating: 0, count: rowBytes * rows)
        out.withUnsafeMutableBytes { dst in
            for row in 0..<rows {
                (dst.baseAddress! + row * rowBytes).copyMemory(
                    from: baseAddress + row * bytesPerRow, byteCount: rowBytes)
            }
        }
        return out
    }

    /// Scales these pixels into `destination` (its size and pixel format, which must be this
    /// buffer's), area-averaging when shrinking and bilinear otherwise. The corresponding C call is
    /// `cvb_image_resize` (OpenCV's `cv::resize`). Thread-safe for distinct destinations.
    public func resize(into destination: PixelBuffer) throws(CaptureError) {
        try Imaging.resize(self, into: destination, "scaling a \(width)x\(height) frame to \(destination.width)x\(destination.height)")
    }

    /// The channel values of one pixel (BGR: [b, g, r]; gray: [y]; BGRA: [b, g, r, a]).
    /// For YUYV and NV12 this returns the luma byte.
    public func pixel(x: Int, y: Int) -> [UInt8] {
        precondition(x >= 0 && x < width && y >= 0 && y < height, "pixel (\(x), \(y)) outside the buffer")
        let row = baseAddress + y * bytesPerRow
        switch pixelFormat {
        case .bgr: return (0..<3).map { row.load(fromByteOffset: x * 3 + $0, as: UInt8.self) }
        case .bgra: return (0..<4).map { row.load(fromByteOffset: x * 4 + $0, as: UInt8.self) }
        case .gray, .nv12: return [row.load(fromByteOffset: x, as: UInt8.self)]
        case .yuyv: return [row.load(fromByteOffset: x * 2, as: UInt8.self)]
        }
    }
}

/// Recycles frame-sized CVBridge matrices so steady-state capture allocates nothing per frame.
///
/// Threading: thread-safe. Buffers return to the pool from whichever thread releases them.
public final class PixelBufferPool: Sendable {
    /// Width of the buffers this pool makes.
    public let width: Int
    /// Height of the buffers this pool makes.
    public let height: Int
    /// Format of the buffers this pool makes.
    public let pixelFormat: PixelFormat
    /// How many idle buffers the pool keeps; more are freed.
    public let maximumIdleBuffers: Int

    private let idle = Mutex<[SendableMat]>([])

    private struct SendableMat: @unchecked Sendable {
        // @unchecked: an idle matrix is owned by the pool alone until handed out.
        let pointer: OpaquePointer
    }

    /// Creates an empty pool.
    public init(width: Int, height: Int, pixelFormat: PixelFormat, maximumIdleBuffers: Int = 8) {
        self.width = width
        self.height = height
        self.pixelFormat = pixelFormat
        self.maximumIdleBuffers = maximumIdleBuffers
    }

    deinit {
        idle.withLock { mats in mats.forEach { cvb_mat_release($0.pointer) } }
    }

    /// A buffer from the pool, or a new one when none is idle.
    public func makeBuffer() throws(CaptureError) -> PixelBuffer {
        if let reused = idle.withLock({ $0.popLast() }) {
            return PixelBuffer(ownedMat: reused.pointer, pool: self)
        }
        var err = cvb_error()
        guard let mat = cvb_mat_create(Int32(width), Int32(height), pixelFormat.rawValue, &err) else {
            throw CaptureError(.outOfMemory, "cannot allocate a \(width)x\(height) \(pixelFormat) buffer", bridge: err)
        }
        return PixelBuffer(ownedMat: mat, pool: self)
    }

    /// Number of idle buffers (for tests and diagnostics).
    public var idleCount: Int { idle.withLock { $0.count } }

    fileprivate func recycle(_ mat: OpaquePointer) {
        let kept = idle.withLock { mats -> Bool in
            guard mats.count < maximumIdleBuffers else { return false }
            mats.append(SendableMat(pointer: mat))
            return true
        }
        if !kept { cvb_mat_release(mat) }
    }
}
