import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Writes Motion-JPEG in an AVI 1.0 file so that a killed process leaves a playable file.
///
/// Why this container, measured on this system (OpenCV 4.6 writers, killed with SIGKILL,
/// read back with OpenCV's FFmpeg reader): MP4 from the FFmpeg writer has no index until it is
/// closed and cannot be opened; Matroska from the same writer lost every frame; MJPEG-in-AVI
/// and the GStreamer muxers survive. Writing the AVI here, with plain `write(2)` and no
/// user-space buffering, gives the movie output control over what is on disk:
///
/// - every frame goes to the kernel as soon as it is encoded (a killed process loses none of
///   the bytes; a power cut loses what was not yet fsynced);
/// - at each fragment (`fragment()`) the headers (RIFF and `movi` sizes, frame counts) are
///   rewritten to describe every frame so far and the file is fsynced, so the file is a
///   consistent AVI up to the last fragment whatever happens next;
/// - `finish()` appends the `idx1` index and final sizes.
///
/// Trade-offs: MJPEG is intra-only, so files are 5–10× larger than H.264 at the same quality,
/// but encoding is cheap (libjpeg-turbo) and any frame decodes alone; AVI 1.0 is limited to
/// 2 GiB here (sizes are 32-bit and many readers treat them as signed), which the movie output
/// enforces as a file-size limit; the frame rate is fixed (the input's nominal rate), so
/// dropped frames shorten the movie instead of leaving a gap.
///
/// Threading: one thread at a time (the movie output's writer queue).
final class MJPEGAVIWriter {
    /// Largest file this writer produces (AVI 1.0 with signed 32-bit sizes), with room for the index.
    static let maximumFileSize: Int64 = Int64(Int32.max) - 16 * 1024 * 1024

    let path: String
    let width: Int
    let height: Int
    private let calls: any FileSystemCalls
    private var fd: Int32 = -1
    private var index: [(offset: UInt32, size: UInt32)] = []
    private var end: Int64 = 0  // file length so far
    private var largestFrame: UInt32 = 0
    /// Frames covered by the headers on disk (the last fragment).
    private(set) var framesInLastFragment = 0

    // Fixed layout: RIFF(12) LIST hdrl(12) avih(8+56) LIST strl(12) strh(8+56) strf(8+40) LIST movi(12).
    private static let moviListOffset: Int64 = 212
    private static let moviDataOffset: Int64 = 224
    private static let avihTotalFramesOffset: Int64 = 48
    private static let avihBufferSizeOffset: Int64 = 60
    private static let strhLengthOffset: Int64 = 140
    private static let strhBufferSizeOffset: Int64 = 144

    /// Frames written so far.
    var frameCount: Int { index.count }
    /// Bytes in the file so far.
    var fileSize: Int64 { end }

    /// Creates the file (it must not exist) and writes the headers. When the headers cannot be
    /// written (a full disk), the file it created is removed again: it would hold no frame. The
    /// corresponding C functions are `open(2)` with O_CREAT|O_EXCL, `write(2)` and `unlink(2)`.
    init(path: String, width: Int, height: Int, frameDuration: MediaTime, calls: any FileSystemCalls) throws(CaptureError) {
        self.path = path
        self.width = width
        self.height = height
        self.calls = calls
        switch calls.open(path, flags: O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode: 0o644) {
        case .success(let f): fd = f
        case .failure(let e):
            let folder = (path as NSString).deletingLastPathComponent
            let why = e.rawValue == EEXIST ? "the file already exists; choose a new name" : AtomicFile.advice(for: e.rawValue, folder: folder)
            throw CaptureError(.writeFailed, "cannot create the movie \(path): \(why)", path: path, errno: e.rawValue)
        }
        var h = ByteWriter()
        h.fourCC("RIFF"); h.u32(0); h.fourCC("AVI ")
        h.fourCC("LIST"); h.u32(4 + 64 + 12 + 64 + 48); h.fourCC("hdrl")
        h.fourCC("avih"); h.u32(56)
        h.u32(UInt32(clamping: Int64((frameDuration.seconds * 1_000_000).rounded())))  // µs per frame
        h.u32(0); h.u32(0)
        h.u32(0x10)  // AVIF_HASINDEX (the index arrives with finish())
        h.u32(0); h.u32(0); h.u32(1); h.u32(0)  // total frames, initial frames, streams, buffer size
        h.u32(UInt32(width)); h.u32(UInt32(height)); h.u32(0); h.u32(0); h.u32(0); h.u32(0)
        h.fourCC("LIST"); h.u32(4 + 64 + 48); h.fourCC("strl")
        h.fourCC("strh"); h.u32(56)
        h.fourCC("vids"); h.fourCC("MJPG"); h.u32(0); h.u16(0); h.u16(0); h.u32(0)
        h.u32(UInt32(clamping: frameDuration.value)); h.u32(UInt32(frameDuration.timescale))  // scale, rate
        h.u32(0); h.u32(0); h.u32(0)  // start, length, buffer size
        h.u32(UInt32.max); h.u32(0)  // quality (default), sample size (varies)
        h.u16(0); h.u16(0); h.u16(UInt16(clamping: width)); h.u16(UInt16(clamping: height))
        h.fourCC("strf"); h.u32(40)
        h.u32(40); h.u32(UInt32(width)); h.u32(UInt32(height)); h.u16(1); h.u16(24); h.fourCC("MJPG")
        h.u32(UInt32(clamping: width * height * 3)); h.u32(0); h.u32(0); h.u32(0); h.u32(0)
        h.fourCC("LIST"); h.u32(4); h.fourCC("movi")
        precondition(Int64(h.bytes.count) == Self.moviDataOffset, "AVI header layout")
        do throws(CaptureError) {
            try append(h.bytes)
            try fragment()
        } catch {
            discard()
            throw error
        }
    }

    /// Closes and removes the file: for a movie that holds no frame (its creation or its first
    /// frame failed). The file is this writer's own (made with O_EXCL), never one that was there.
    func discard() {
        abandon()
        _ = calls.unlink(path)
    }

    deinit { abandon() }

    /// Appends one JPEG frame as a `00dc` chunk. The corresponding C function is `write(2)`.
    func append(jpeg: Data) throws(CaptureError) {
        let offset = end - (Self.moviListOffset + 8)  // idx1 offsets count from the 'movi' fourcc
        var chunk = ByteWriter()
        chunk.fourCC("00dc"); chunk.u32(UInt32(jpeg.count))
        chunk.bytes += jpeg
        if jpeg.count & 1 == 1 { chunk.bytes.append(0) }
        try append(chunk.bytes)
        index.append((UInt32(offset), UInt32(jpeg.count)))
        largestFrame = max(largestFrame, UInt32(jpeg.count))
    }

    /// Rewrites the headers to cover every frame so far and fsyncs the file: from now on the
    /// file plays up to here whatever happens to the process. The corresponding C functions are
    /// `pwrite(2)` and `fsync(2)`.
    func fragment() throws(CaptureError) {
        try patchSizes(riffEnd: end)
        if case .failure(let e) = calls.fsync(fd) { throw failure("flushing", e) }
        framesInLastFragment = index.count
    }

    /// Appends the index, writes the final sizes, fsyncs and closes the file.
    func finish() throws(CaptureError) {
        guard fd >= 0 else { return }
        defer { abandon() }
        var idx = ByteWriter()
        idx.fourCC("idx1"); idx.u32(UInt32(index.count * 16))
        for entry in index {
            idx.fourCC("00dc"); idx.u32(0x10); idx.u32(entry.offset); idx.u32(entry.size)  // AVIIF_KEYFRAME
        }
        let moviEnd = end
        try append(idx.bytes)
        try patchSizes(riffEnd: end, moviEnd: moviEnd)
        if case .failure(let e) = calls.fsync(fd) { throw failure("flushing", e) }
        framesInLastFragment = index.count
        if case .failure(let e) = calls.close(fd) { fd = -1; throw failure("closing", e) }
        fd = -1
        let folder = (path as NSString).deletingLastPathComponent
        try AtomicFile.syncFolder(folder.isEmpty ? "." : folder, calls: calls, path: path)
    }

    /// Takes the frames from `count` on back out of the file (a clip that learned its end after
    /// writing past it). The headers on disk still describe the last fragment until the next
    /// The headers are rewritten to the shorter file at once (never describing bytes that are
    /// gone); they reach the disk with the next `fragment()` or `finish()`. The corresponding C
    /// functions are `ftruncate(2)`, `lseek(2)` and `pwrite(2)`.
    func truncate(toFrameCount count: Int) throws(CaptureError) {
        guard count >= 0, count < index.count, fd >= 0 else { return }
        let newEnd = Self.moviListOffset + 8 + Int64(index[count].offset)
        guard Glibc.ftruncate(fd, off_t(newEnd)) == 0 else { throw failure("shortening", .current) }
        _ = Glibc.lseek(fd, off_t(newEnd), SEEK_SET)
        end = newEnd
        index.removeLast(index.count - count)
        largestFrame = index.map(\.size).max() ?? 0
        framesInLastFragment = min(framesInLastFragment, count)
        try patchSizes(riffEnd: end)
    }

    /// Closes the descriptor without finishing (after a failure); the file keeps its last fragment.
    func abandon() {
        if fd >= 0 { _ = calls.close(fd) }
        fd = -1
    }

    private func patchSizes(riffEnd: Int64, moviEnd: Int64? = nil) throws(CaptureError) {
        let frames = UInt32(index.count)
        let moviSize = UInt32((moviEnd ?? riffEnd) - (Self.moviListOffset + 8))
        try put(UInt32(riffEnd - 8), at: 4)
        try put(frames, at: Self.avihTotalFramesOffset)
        try put(largestFrame, at: Self.avihBufferSizeOffset)
        try put(frames, at: Self.strhLengthOffset)
        try put(largestFrame, at: Self.strhBufferSizeOffset)
        try put(moviSize, at: Self.moviListOffset + 4)
    }

    private func put(_ value: UInt32, at offset: Int64) throws(CaptureError) {
        var le = value.littleEndian
        let result = withUnsafeBytes(of: &le) { calls.pwrite(fd, $0, offset: offset) }
        switch result {
        case .success(4): return
        case .success: throw failure("updating the header of", FileErrno(rawValue: EIO))
        case .failure(let e): throw failure("updating the header of", e)
        }
    }

    private func append(_ bytes: [UInt8]) throws(CaptureError) {
        var written = 0
        var error: CaptureError?
        bytes.withUnsafeBytes { raw in
            while written < raw.count {
                switch calls.write(fd, UnsafeRawBufferPointer(rebasing: raw[written...])) {
                case .success(let n) where n > 0: written += n
                case .success: error = failure("writing", FileErrno(rawValue: EIO)); return
                case .failure(let e): error = failure("writing", e); return
                }
            }
        }
        end += Int64(written)
        if let error {
            // Cut a partial chunk off so the tail stays parseable for readers that scan.
            end -= Int64(written)
            _ = Glibc.ftruncate(fd, off_t(end))
            _ = Glibc.lseek(fd, off_t(end), SEEK_SET)
            throw error
        }
    }

    private func failure(_ step: String, _ e: FileErrno) -> CaptureError {
        let folder = (path as NSString).deletingLastPathComponent
        return CaptureError(
            .writeFailed, "\(step) the movie \(path) failed: \(AtomicFile.advice(for: e.rawValue, folder: folder))",
            path: path, errno: e.rawValue)
    }
}

/// Little-endian RIFF fields.
private struct ByteWriter {
    var bytes: [UInt8] = []
    mutating func u32(_ v: UInt32) { bytes += (0..<4).map { UInt8((v >> (8 * $0)) & 0xFF) } }
    mutating func u16(_ v: UInt16) { bytes += [UInt8(v & 0xFF), UInt8(v >> 8)] }
    mutating func fourCC(_ s: String) { bytes += Array(s.utf8.prefix(4)) }
}
