import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Reads the JPEG frames of a Motion-JPEG AVI as they are stored, without decoding them: the
/// movies and clips CaptureKit writes (`CaptureMovieFileOutput`, `CaptureClipOutput`), or any
/// AVI whose video stream is MJPEG in `00dc`/`00db` chunks.
///
/// The reader walks the file's chunks itself rather than trusting the sizes in its headers, so
/// a file that is still being written, or was cut short by a crash, reads up to its last
/// complete frame. Sizes are bounded (`maximumFrameSize`) so a damaged or hostile file cannot
/// make it allocate without limit; anything it does not understand ends the frames, never the
/// process.
///
/// Threading: one thread at a time.
public final class MJPEGAVIReader {
    /// The largest frame read; a chunk claiming more ends the frames.
    public static let maximumFrameSize = 64 << 20

    /// Time per frame from the AVI's main header (`avih`), or 1/30 s when it says 0.
    public let frameDuration: MediaTime
    /// Frame size from the main header.
    public let width: Int
    public let height: Int
    /// Frames the headers say the file holds (the last fragment, for a file being written).
    public let declaredFrameCount: Int
    /// Frames returned by `nextFrame()` so far.
    public private(set) var framesRead = 0

    private var fd: Int32
    private var position: Int64
    private var moviEnd: Int64 = .max

    /// Opens `path` and reads its headers. The corresponding C functions are `open(2)` and
    /// `pread(2)`.
    ///
    /// - Throws: `.fileNotFound`, or `.cannotOpenVideo` when the file cannot be opened or is not an AVI.
    public convenience init(path: String) throws(CaptureError) {
        let fd = FilePathBytes.withCString(path) { Glibc.open($0, O_RDONLY | O_CLOEXEC) }
        guard fd >= 0 else {
            let e = errno
            throw CaptureError(
                e == ENOENT ? .fileNotFound : .cannotOpenVideo, "cannot open \(path): \(String(cString: strerror(e)))", path: path,
                errno: e)
        }
        try self.init(fileDescriptor: fd, name: path)
    }

    /// Reads the headers of the AVI open on `fileDescriptor`, which the reader then owns (it is
    /// closed when the reader goes away, also when this throws). `name` is only for messages.
    ///
    /// - Throws: `.cannotOpenVideo` when the file is not an AVI with a main header and a `movi` list.
    public init(fileDescriptor: Int32, name: String) throws(CaptureError) {
        fd = fileDescriptor
        position = 0
        func notAVI(_ why: String) -> CaptureError {
            CaptureError(.cannotOpenVideo, "\(name) is not a Motion-JPEG AVI: \(why)", path: name)
        }
        var riff = [UInt8](repeating: 0, count: 12)
        guard Self.read(fd, into: &riff, at: 0) == 12, Self.fourCC(riff, 0) == "RIFF", Self.fourCC(riff, 8) == "AVI " else {
            Glibc.close(fd)
            fd = -1
            throw notAVI("it does not start with RIFF/AVI")
        }
        var offset: Int64 = 12
        var micros: UInt32 = 0
        var size = (0, 0, 0)
        var movi: Int64?
        // Top-level chunks: LIST hdrl (headers) then LIST movi (frames).
        while movi == nil {
            var head = [UInt8](repeating: 0, count: 12)
            let got = Self.read(fd, into: &head, at: offset)
            guard got >= 8 else { break }
            let id = Self.fourCC(head, 0)
            let length = Int64(Self.u32(head, 4))
            if id == "LIST", got == 12, Self.fourCC(head, 8) == "movi" {
                movi = offset + 12
                break
            }
            if id == "LIST", got == 12, Self.fourCC(head, 8) == "hdrl", length >= 4 + 64, length < 1 << 20 {
                var hdrl = [UInt8](repeating: 0, count: Int(length) - 4)
                if Self.read(fd, into: &hdrl, at: offset + 12) == hdrl.count, Self.fourCC(hdrl, 0) == "avih" {
                    micros = Self.u32(hdrl, 8)
                    size = (Int(Self.u32(hdrl, 8 + 16)), Int(Self.u32(hdrl, 8 + 32)), Int(Self.u32(hdrl, 8 + 36)))
                }
            }
            offset += 8 + length + (length & 1)
        }
        guard let movi else {
            Glibc.close(fd)
            fd = -1
            throw notAVI("it has no 'movi' list")
        }
        position = movi
        frameDuration = micros > 0 ? MediaTime(value: Int64(micros), timescale: 1_000_000) : MediaTime(value: 1, timescale: 30)
        declaredFrameCount = size.0
        width = size.1
        height = size.2
    }

    deinit {
        if fd >= 0 { Glibc.close(fd) }
    }

    /// The next frame's JPEG bytes, or nil after the last complete frame (the index, the end of
    /// the file, a cut-off chunk, or a chunk too large to be a frame). Audio and other chunks
    /// are skipped. The corresponding C function is `pread(2)`.
    public func nextFrame() -> Data? {
        guard fd >= 0 else { return nil }
        while position < moviEnd {
            var head = [UInt8](repeating: 0, count: 8)
            guard Self.read(fd, into: &head, at: position) == 8 else { return nil }
            let id = Self.fourCC(head, 0)
            let length = Int(Self.u32(head, 4))
            if id == "idx1" { return nil }
            if id == "LIST" {
                // A `rec ` list groups chunks: step inside it.
                position += 12
                continue
            }
            guard length <= Self.maximumFrameSize else { return nil }
            let body = position + 8
            position = body + Int64(length) + Int64(length & 1)
            guard id.hasPrefix("00d") else { continue }
            var bytes = [UInt8](repeating: 0, count: length)
            guard Self.read(fd, into: &bytes, at: body) == length else { return nil }
            framesRead += 1
            return Data(bytes)
        }
        return nil
    }

    /// Reads up to `buffer.count` bytes at `offset`; the count read (short at the end of the file).
    private static func read(_ fd: Int32, into buffer: inout [UInt8], at offset: Int64) -> Int {
        var total = 0
        while total < buffer.count {
            let n = buffer.withUnsafeMutableBytes { raw in
                Glibc.pread(fd, raw.baseAddress! + total, raw.count - total, off_t(offset + Int64(total)))
            }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            total += n
        }
        return total
    }

    private static func u32(_ b: [UInt8], _ i: Int) -> UInt32 {
        guard i + 4 <= b.count else { return 0 }
        return UInt32(b[i]) | UInt32(b[i + 1]) << 8 | UInt32(b[i + 2]) << 16 | UInt32(b[i + 3]) << 24
    }

    private static func fourCC(_ b: [UInt8], _ i: Int) -> String {
        guard i + 4 <= b.count else { return "" }
        return String(decoding: b[i..<(i + 4)], as: UTF8.self)
    }
}
