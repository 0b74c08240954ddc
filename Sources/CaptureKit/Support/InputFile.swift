#if canImport(Glibc)
import Glibc
#endif

/// Checks a file the user points cvcam at before a decoder sees it: that it can be opened (an
/// error with errno when not), that it is a regular file (a FIFO or socket blocks a decoder
/// that opens it twice, and cannot be read again), and, for images, the size its header
/// declares, so a small file cannot make the decoder allocate gigabytes.
///
/// Threading: stateless; call from any thread.
enum InputFile {
    /// The file's status (`stat`, following symbolic links), or an error that names the path and errno.
    static func status(_ path: String, code: CaptureError.Code) throws(CaptureError) -> stat {
        var st = stat()
        guard FilePathBytes.withCString(path, { stat($0, &st) }) == 0 else { throw openError(path, errno: Glibc.errno, code: code) }
        return st
    }

    /// Whether `st` describes a folder.
    static func isFolder(_ st: stat) -> Bool { st.st_mode & S_IFMT == S_IFDIR }

    /// Opens a regular file read-only and calls `body` with its descriptor. The open does not
    /// block (`O_NONBLOCK`, so a FIFO without a writer cannot hang it), and anything but a
    /// regular file is refused. The corresponding C calls are `open` and `fstat`.
    static func withRegularFile<R>(
        _ path: String, kind: String, code: CaptureError.Code, _ body: (Int32) throws(CaptureError) -> R
    ) throws(CaptureError) -> R {
        var fd: Int32
        repeat { fd = FilePathBytes.withCString(path) { open($0, O_RDONLY | O_NONBLOCK | O_CLOEXEC) } } while fd < 0 && errno == EINTR
        guard fd >= 0 else { throw openError(path, errno: errno, code: code) }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw openError(path, errno: errno, code: code) }
        let type = st.st_mode & S_IFMT
        guard type == S_IFREG else {
            let what =
                switch type {
                case S_IFDIR: "a folder"
                case S_IFIFO: "a FIFO (named pipe)"
                case S_IFSOCK: "a socket"
                case S_IFCHR: "a character device"
                case S_IFBLK: "a block device"
                default: "not a regular file"
                }
            throw CaptureError(
                code,
                "\(path) is \(what), not \(kind) file: cvcam reads regular files only (save the stream to a file first)",
                path: path)
        }
        return try body(fd)
    }

    /// The error for a failed `open`/`stat`, in the user's words, with errno.
    static func openError(_ path: String, errno: Int32, code: CaptureError.Code) -> CaptureError {
        switch errno {
        case ENOENT, ENOTDIR:
            CaptureError(.fileNotFound, "no file at \(path): check the path", path: path, errno: errno)
        case EACCES, EPERM:
            CaptureError(
                .permissionDenied, "cannot read \(path): permission denied; check its permissions and its folders'",
                path: path, errno: errno)
        case ELOOP:
            CaptureError(
                code, "cannot open \(path): too many levels of symbolic links (a link loop?)", path: path, errno: errno)
        default:
            CaptureError(code, "cannot open \(path): \(String(cString: strerror(errno)))", path: path, errno: errno)
        }
    }

    /// Reads up to `count` bytes at `offset` (`pread`, EINTR retried); fewer at the end of the file.
    static func bytes(_ fd: Int32, at offset: Int, count: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        var got = 0
        while got < count {
            let n = out.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + got, count - got, off_t(offset + got)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            got += n
        }
        return Array(out.prefix(got))
    }
}

/// The pixel size an image file's header declares, read without decoding: PNG (IHDR), JPEG
/// (the first SOFn marker), BMP, WebP (VP8, VP8L, VP8X) and PNM. Nil for other formats or a
/// header too damaged to read, which the decoder then judges.
enum ImageHeader {
    static func dimensions(_ fd: Int32) -> (width: Int, height: Int)? {
        let head = InputFile.bytes(fd, at: 0, count: 64)
        func be(_ b: [UInt8], _ i: Int, _ n: Int) -> Int { (i..<i + n).reduce(0) { $0 << 8 | Int(b[$1]) } }
        func le(_ b: [UInt8], _ i: Int, _ n: Int) -> Int { (i..<i + n).reversed().reduce(0) { $0 << 8 | Int(b[$1]) } }
        if head.count >= 24, head.starts(with: [0x89, 0x50, 0x4E, 0x47]) {
            return (be(head, 16, 4), be(head, 20, 4))
        }
        if head.count >= 4, head[0] == 0xFF, head[1] == 0xD8 { return jpeg(fd) }
        if head.count >= 26, head[0] == 0x42, head[1] == 0x4D {
            if le(head, 14, 4) == 12 { return (le(head, 18, 2), le(head, 20, 2)) }
            return (Int(Int32(truncatingIfNeeded: le(head, 18, 4))).magnitude.asInt,
                    Int(Int32(truncatingIfNeeded: le(head, 22, 4))).magnitude.asInt)
        }
        if head.count >= 30, head.starts(with: Array("RIFF".utf8)), Array(head[8..<12]) == Array("WEBP".utf8) {
            switch String(decoding: head[12..<16], as: UTF8.self) {
            case "VP8 ": return (le(head, 26, 2) & 0x3FFF, le(head, 28, 2) & 0x3FFF)
            case "VP8L":
                let b = head[21..<25].map(Int.init)
                return (1 + (b[0] | (b[1] & 0x3F) << 8), 1 + (b[1] >> 6 | b[2] << 2 | (b[3] & 0x0F) << 10))
            case "VP8X": return (1 + le(head, 24, 3), 1 + le(head, 27, 3))
            default: return nil
            }
        }
        if head.count >= 2, head[0] == UInt8(ascii: "P"), (UInt8(ascii: "1")...UInt8(ascii: "6")).contains(head[1]) {
            return pnm(InputFile.bytes(fd, at: 2, count: 1024))
        }
        return nil
    }

    /// Walks the marker segments to the first start-of-frame (SOF0…SOF15 but DHT, JPG, DAC).
    private static func jpeg(_ fd: Int32) -> (width: Int, height: Int)? {
        var offset = 2
        for _ in 0..<1000 {
            let b = InputFile.bytes(fd, at: offset, count: 9)
            guard b.count >= 4 else { return nil }
            guard b[0] == 0xFF else {
                // libjpeg skips stray bytes before a marker and decodes on, so the walk must too:
                // giving up here let such a file skip the pixel limit (found by Tools/fuzz).
                guard let skip = InputFile.bytes(fd, at: offset, count: 65536).firstIndex(of: 0xFF) else { return nil }
                offset += skip
                continue
            }
            let marker = b[1]
            if marker == 0xFF { offset += 1; continue }  // fill byte
            if (0xC0...0xCF).contains(marker) && ![0xC4, 0xC8, 0xCC].contains(marker) {
                guard b.count >= 9 else { return nil }
                return (Int(b[7]) << 8 | Int(b[8]), Int(b[5]) << 8 | Int(b[6]))
            }
            if marker == 0xD9 || marker == 0xDA { return nil }
            offset += 2 + (Int(b[2]) << 8 | Int(b[3]))
        }
        return nil
    }

    /// Width and height from a PNM header after the magic (whitespace and # comments between).
    private static func pnm(_ b: [UInt8]) -> (width: Int, height: Int)? {
        var numbers: [Int] = []
        var i = 0
        while i < b.count && numbers.count < 2 {
            if b[i] == UInt8(ascii: "#") {
                while i < b.count && b[i] != 0x0A { i += 1 }
            } else if (0x30...0x39).contains(b[i]) {
                var n = 0
                while i < b.count, (0x30...0x39).contains(b[i]), n < 1 << 40 { n = n * 10 + Int(b[i] - 0x30); i += 1 }
                numbers.append(n)
                continue
            }
            i += 1
        }
        return numbers.count == 2 ? (numbers[0], numbers[1]) : nil
    }
}

extension UInt {
    fileprivate var asInt: Int { Int(clamping: self) }
}
