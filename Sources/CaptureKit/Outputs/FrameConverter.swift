import Synchronization

/// Converts frames to a pixel format, rotation and mirroring (`Imaging.convert` and
/// `Imaging.rotateMirror`: `cv::cvtColor`, `cv::rotate`, `cv::flip`), reusing buffers from pools sized to the last frames seen.
/// Passes a frame through untouched when nothing needs to change. The source's JPEG
/// (`SampleBuffer.jpegData`) survives a pixel-format conversion (it is the same picture) and is
/// dropped by rotation or mirroring (it would no longer match the pixels).
///
/// Threading: thread-safe (the pools are behind a Mutex; conversions run unlocked).
final class FrameConverter: Sendable {
    private let pools = Mutex<[PoolKey: PixelBufferPool]>([:])

    private struct PoolKey: Hashable {
        let width: Int
        let height: Int
        let format: PixelFormat
    }

    /// Converts `sample` to `format` (nil: keep), rotated clockwise by `rotation` degrees and
    /// then mirrored left-right when `mirrored`. Rotating a YUYV or NV12 frame delivers BGR.
    func convert(_ sample: SampleBuffer, to format: PixelFormat?, rotation: Int32, mirrored: Bool) throws(CaptureError)
        -> SampleBuffer
    {
        let source = sample.pixelBuffer
        var target = format ?? source.pixelFormat
        let transforms = rotation != 0 || mirrored
        if transforms && (target == .yuyv || target == .nv12) { target = .bgr }
        if target == source.pixelFormat && !transforms { return sample }

        var current = source
        if target != source.pixelFormat {
            let converted = try buffer(width: source.width, height: source.height, format: target)
            try Imaging.convert(source, into: converted, "cannot convert \(source.pixelFormat) to \(target)")
            current = converted
        }
        if transforms {
            let quarter = rotation == 90 || rotation == 270
            let rotated = try buffer(
                width: quarter ? current.height : current.width, height: quarter ? current.width : current.height,
                format: target)
            try Imaging.rotateMirror(
                current, into: rotated, degrees: rotation, mirrored: mirrored, "cannot rotate the frame by \(rotation)°")
            current = rotated
        }
        return SampleBuffer(
            pixelBuffer: current, presentationTimeStamp: sample.presentationTimeStamp, duration: sample.duration,
            sequenceNumber: sample.sequenceNumber, inputID: sample.inputID, jpegData: transforms ? nil : sample.jpegData)
    }

    private func buffer(width: Int, height: Int, format: PixelFormat) throws(CaptureError) -> PixelBuffer {
        let key = PoolKey(width: width, height: height, format: format)
        let pool = pools.withLock { pools in
            if let pool = pools[key] { return pool }
            if pools.count > 8 { pools.removeAll() }  // sizes keep changing (image folders): don't hoard
            let pool = PixelBufferPool(width: width, height: height, pixelFormat: format)
            pools[key] = pool
            return pool
        }
        return try pool.makeBuffer()
    }
}
