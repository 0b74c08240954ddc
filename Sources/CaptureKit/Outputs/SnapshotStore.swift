import Foundation

/// Writes snapshots to a folder as full-resolution JPEG photos: the record (time, faceIDs,
/// boxes, scores, reason) is embedded as JSON in EXIF UserComment, the same place
/// `CapturePhotoOutput` puts its annotations, so one file says everything and is written
/// atomically (`AtomicFile`). Frames from before the trigger are written next to it as
/// `<name>-pre-<n>.jpg`, oldest first.
///
/// Threading: thread-safe (no shared mutable state); call `write` off the capture thread.
public struct SnapshotStore: Sendable {
    /// The folder snapshots go to.
    public let folder: URL
    /// JPEG quality 0…100.
    public var quality: Int
    /// The device the frames came from (EXIF Make/Model), if known.
    public var device: CaptureDevice?
    /// Clockwise rotation recorded as EXIF Orientation (the connection's), and mirroring.
    public var rotation: Int32
    public var mirrored: Bool
    /// The start of every file name; give each run its own (e.g. with the start time) so runs
    /// into one folder never collide. Existing files are never replaced.
    public var namePrefix = "snapshot"
    let calls: any FileSystemCalls

    /// Creates a store writing into `folder` (which must exist).
    public init(folder: URL, quality: Int = 92, device: CaptureDevice? = nil, rotation: Int32 = 0, mirrored: Bool = false) {
        self.init(folder: folder, quality: quality, device: device, rotation: rotation, mirrored: mirrored, calls: SystemFileCalls())
    }

    init(folder: URL, quality: Int, device: CaptureDevice?, rotation: Int32, mirrored: Bool, calls: any FileSystemCalls) {
        self.folder = folder
        self.quality = quality
        self.device = device
        self.rotation = rotation
        self.mirrored = mirrored
        self.calls = calls
    }

    /// The file name a snapshot gets: `<namePrefix>-<frame time in ms>-f<faceIDs>.jpg`.
    public func fileName(for snapshot: Snapshot) -> String {
        let ms = Int64((snapshot.frame.presentationTimeStamp.seconds * 1000).rounded())
        let ids = snapshot.triggeringFaceIDs.map(String.init).joined(separator: "-")
        return namePrefix + String(format: "-%09lld-f%@.jpg", ms, ids)
    }

    /// Encodes and writes `snapshot` (and its preceding frames); returns the photo's URL.
    ///
    /// - Throws: `.writeFailed` (disk full, folder not writable) or `.conversionFailed`.
    @discardableResult
    public func write(_ snapshot: Snapshot, captureDate: Date = Date()) throws(CaptureError) -> URL {
        let converter = FrameConverter()
        let url = folder.appendingPathComponent(fileName(for: snapshot))
        for (i, pre) in snapshot.precedingFrames.enumerated() {
            let data = try encode(pre.pixelBuffer, annotation: nil, date: captureDate, converter: converter)
            let name = url.deletingPathExtension().lastPathComponent + String(format: "-pre-%02d.jpg", i + 1)
            try AtomicFile.write(data, to: folder.appendingPathComponent(name), replacing: false, calls: calls)
        }
        let data = try encode(snapshot.frame.pixelBuffer, annotation: snapshot.annotation, date: captureDate, converter: converter)
        try AtomicFile.write(data, to: url, replacing: false, calls: calls)
        return url
    }

    private func encode(_ buffer: PixelBuffer, annotation: PhotoAnnotation?, date: Date, converter: FrameConverter)
        throws(CaptureError) -> Data
    {
        let sample = SampleBuffer(
            pixelBuffer: buffer, presentationTimeStamp: .zero, duration: .zero, sequenceNumber: 0,
            inputID: CaptureInput.ID(rawValue: 0))
        let bgr = try converter.convert(sample, to: .bgr, rotation: 0, mirrored: false).pixelBuffer
        return try PhotoEncoder.encode(
            bgr, codec: .jpeg(quality: quality), rotation: rotation, mirrored: mirrored, device: device,
            captureDate: date, annotation: annotation, converter: converter)
    }
}
