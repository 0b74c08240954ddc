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
    /// The start of every file name: the camera's or input's name, made safe by `sanitizedName(_:)`.
    public var namePrefix = "snapshot"
    /// The clock of the frames' times: camera frames are named by the moment they were taken
    /// (`WallClock`), others by the moment they are written.
    public var frameClock = FrameClock.media
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

    /// The file name a snapshot taken at `wallTime` gets, before any collision suffix:
    /// `<namePrefix>-<local yyyyMMdd-HHmmss.mmm>-<reason>.jpg`, the reason being `face3` (a new
    /// face; several: `face3-5`), `face3-again` (cooldown elapsed) or `every-face3-5` (interval).
    public func fileName(for snapshot: Snapshot, wallTime: Date) -> String {
        let ids = snapshot.triggeringFaceIDs.map(String.init).joined(separator: "-")
        let reason =
            switch snapshot.reason {
            case .newFace: "face\(ids)"
            case .faceCooldownElapsed: "face\(ids)-again"
            case .interval: "every-face\(ids)"
            }
        return "\(namePrefix)-\(LocalTimestamp(wallTime).fileNameStamp)-\(reason).jpg"
    }

    /// `name` as a file-name prefix: ASCII letters and digits kept (lowercased), every other run
    /// of characters one `-`, at most 32 characters; "camera" when nothing is left.
    public static func sanitizedName(_ name: String) -> String {
        var out = ""
        for scalar in name.unicodeScalars {
            if scalar.isASCII, CharacterSet.alphanumerics.contains(scalar) {
                out += String(scalar).lowercased()
            } else if !out.isEmpty, out.last != "-" {
                out.append("-")
            }
            if out.count >= 32 { break }
        }
        while out.last == "-" { out.removeLast() }
        return out.isEmpty ? "camera" : out
    }

    /// Most names tried for one file (`name.jpg`, `name-2.jpg`, …) before giving up; cvcam's
    /// `record --dir` keeps to the same limit.
    public static let maximumCollisionSuffix = 100

    /// Encodes and writes `snapshot` (and its preceding frames); returns the photo's URL. An
    /// existing file is never replaced: a name that exists gets `-2`, `-3`, … before `.jpg`.
    /// `captureDate` is the wall time of a frame on media time (name and EXIF date); camera
    /// frames are stamped with their own time through `WallClock`.
    ///
    /// - Throws: `.writeFailed` (disk full, folder not writable, every name taken) or `.conversionFailed`.
    @discardableResult
    public func write(_ snapshot: Snapshot, captureDate: Date = Date()) throws(CaptureError) -> URL {
        let converter = FrameConverter()
        let wallTime = WallClock.shared.date(for: snapshot.frame.presentationTimeStamp, on: frameClock, processedAt: captureDate)
        let base = (fileName(for: snapshot, wallTime: wallTime) as NSString).deletingPathExtension
        let data = try encode(snapshot.frame.pixelBuffer, annotation: snapshot.annotation, date: wallTime, converter: converter)
        var url = folder.appendingPathComponent(base + ".jpg")
        for suffix in 2...(Self.maximumCollisionSuffix + 1) {
            do throws(CaptureError) {
                try AtomicFile.write(data, to: url, replacing: false, calls: calls)
                break
            } catch where error.errno == EEXIST && suffix <= Self.maximumCollisionSuffix {
                url = folder.appendingPathComponent("\(base)-\(suffix).jpg")
            }
        }
        let stem = url.deletingPathExtension().lastPathComponent
        for (i, pre) in snapshot.precedingFrames.enumerated() {
            let data = try encode(pre.pixelBuffer, annotation: nil, date: wallTime, converter: converter)
            let name = stem + String(format: "-pre-%02d.jpg", i + 1)
            try AtomicFile.write(data, to: folder.appendingPathComponent(name), replacing: false, calls: calls)
        }
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
