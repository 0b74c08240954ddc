extension SyntheticScene {
    /// Renders the scene's frames into a video file (`VideoFileWriter`, MJPEG-in-AVI by
    /// default), deterministically: the same scene always gives the same frames. Used for the
    /// demo clip, tests and benchmarks. Returns the number of frames written.
    ///
    /// - Parameters:
    ///   - path: the video file to write.
    ///   - frames: how many frames (default: the scene's `frameCount`, or 1 s when endless).
    ///   - fourCC: the codec's four-character code (`MJPG` by default).
    ///   - backend: the writer that encodes them (`VideoFileWriter.Backend`).
    /// - Throws: `.writeFailed` when the file cannot be written, or rendering errors.
    @discardableResult
    public func writeClip(
        to path: String, frames: Int? = nil, fourCC: String = "MJPG", backend: VideoFileWriter.Backend = .ffmpeg
    ) throws(CaptureError) -> Int {
        let count = frames ?? frameCount ?? Int(frameRate.rounded())
        let source = try SyntheticCameraSource(scene: self, pacing: .asFastAsPossible)
        let format = source.formats[0]
        try source.open(format: format, frameDuration: MediaTime.frameDuration(framesPerSecond: frameRate))
        defer { source.close() }
        let writer = try VideoFileWriter(
            path: path, fourCC: fourCC, frameRate: frameRate, dimensions: format.dimensions, backend: backend)
        defer { writer.close() }
        for _ in 0..<count {
            guard let frame = try source.nextFrame(isCancelled: { false }) else { break }
            try writer.write(frame.pixelBuffer)
        }
        return writer.frameCount
    }
}
