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

/// The pixel size an image file's header declares, read without decoding, for every format
/// Debian's OpenCV decodes by default: PNG (IHDR), JPEG (the first SOFn marker), BMP, WebP (VP8,
/// VP8L, VP8X), PNM and PFM, TIFF and BigTIFF (the first IFD), JPEG 2000 (codestream SIZ or the
/// JP2 `ihdr` box), OpenEXR (`dataWindow`), Radiance HDR and Sun raster. Nil for any other
/// format or a header too damaged to read: such a file is not decoded (`ImageFolderSource.decode`),
/// since nothing else bounds what OpenCV would allocate for it (its own pixel limit is read
/// from the environment when the library loads, before any caller can set it).
enum ImageHeader {
    /// The formats `dimensions` reads, for messages.
    static let formatNames = "PNG, JPEG, BMP, WebP, PNM/PFM, TIFF, JPEG 2000, OpenEXR, Radiance HDR, Sun raster"

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
        if head.count >= 2, head[0] == UInt8(ascii: "P"),
            (UInt8(ascii: "1")...UInt8(ascii: "7")).contains(head[1]) || head[1] == UInt8(ascii: "F") || head[1] == UInt8(ascii: "f")
        {
            return pnm(InputFile.bytes(fd, at: 2, count: 1024))
        }
        if head.count >= 8, head[0] == head[1], head[0] == UInt8(ascii: "I") || head[0] == UInt8(ascii: "M") {
            return tiff(fd, littleEndian: head[0] == UInt8(ascii: "I"))
        }
        if head.count >= 12, head.starts(with: [0x59, 0xA6, 0x6A, 0x95]) { return (be(head, 4, 4), be(head, 8, 4)) }
        if head.count >= 24, head.starts(with: [0xFF, 0x4F, 0xFF, 0x51]) {
            // SIZ: Lsiz, Rsiz, then Xsiz, Ysiz, XOsiz, YOsiz.
            return (max(0, be(head, 8, 4) - be(head, 16, 4)), max(0, be(head, 12, 4) - be(head, 20, 4)))
        }
        if head.count >= 12, head.starts(with: [0, 0, 0, 0x0C, 0x6A, 0x50, 0x20, 0x20, 0x0D, 0x0A, 0x87, 0x0A]) {
            return jp2(InputFile.bytes(fd, at: 0, count: 65536))
        }
        if head.count >= 8, head.starts(with: [0x76, 0x2F, 0x31, 0x01]) { return exr(InputFile.bytes(fd, at: 8, count: 65536)) }
        if head.starts(with: Array("#?".utf8)) { return hdr(InputFile.bytes(fd, at: 0, count: 8192)) }
        return nil
    }

    /// Width and height (tags 256, 257) from the first IFD of a TIFF (magic 42) or BigTIFF (43).
    private static func tiff(_ fd: Int32, littleEndian: Bool) -> (width: Int, height: Int)? {
        func number(_ b: ArraySlice<UInt8>) -> Int {
            let bytes = littleEndian ? Array(b.reversed()) : Array(b)
            return bytes.reduce(0) { $0 << 8 | Int($1) }
        }
        let head = InputFile.bytes(fd, at: 0, count: 16)
        guard head.count >= 8 else { return nil }
        let big = number(head[2..<4]) == 43
        guard big || number(head[2..<4]) == 42, !big || head.count >= 16 else { return nil }
        let ifd = big ? number(head[8..<16]) : number(head[4..<8])
        let entrySize = big ? 20 : 12, countSize = big ? 8 : 2
        guard ifd >= 8, ifd < 1 << 40 else { return nil }
        let countBytes = InputFile.bytes(fd, at: ifd, count: countSize)
        guard countBytes.count == countSize else { return nil }
        let count = min(number(countBytes[...]), 4096)
        let entries = InputFile.bytes(fd, at: ifd + countSize, count: count * entrySize)
        var width: Int?, height: Int?
        for i in 0..<(entries.count / entrySize) {
            let e = entries[(i * entrySize)..<((i + 1) * entrySize)]
            let tag = number(e.prefix(2)), type = number(e.dropFirst(2).prefix(2))
            let field = e.dropFirst(big ? 12 : 8)
            // SHORT (3) sits in the field's first two bytes; LONG (4) and LONG8 (16) fill it.
            let value = type == 3 ? number(field.prefix(2)) : type == 4 ? number(field.prefix(4)) : type == 16 ? number(field.prefix(8)) : nil
            if tag == 256 { width = value } else if tag == 257 { height = value }
        }
        guard let width, let height else { return nil }
        return (width, height)
    }

    /// Height and width from the `ihdr` box inside the JP2 header box (`jp2h`).
    private static func jp2(_ b: [UInt8]) -> (width: Int, height: Int)? {
        func be(_ i: Int, _ n: Int) -> Int { (i..<i + n).reduce(0) { $0 << 8 | Int(b[$1]) } }
        var offset = 0, end = b.count
        while offset + 8 <= end {
            let length = be(offset, 4), type = String(decoding: b[(offset + 4)..<(offset + 8)], as: UTF8.self)
            if type == "jp2h" {
                // Its boxes follow its own header.
                end = length >= 8 ? min(b.count, offset + length) : b.count
                offset += 8
                continue
            }
            if type == "ihdr" { return offset + 16 <= b.count ? (be(offset + 12, 4), be(offset + 8, 4)) : nil }
            guard length >= 8 else { return nil }
            offset += length
        }
        return nil
    }

    /// Width and height from the `dataWindow` attribute (box2i: xMin, yMin, xMax, yMax) of an
    /// OpenEXR header; `b` starts after the magic and version.
    private static func exr(_ b: [UInt8]) -> (width: Int, height: Int)? {
        func le(_ i: Int) -> Int { Int(Int32(bitPattern: UInt32(b[i]) | UInt32(b[i + 1]) << 8 | UInt32(b[i + 2]) << 16 | UInt32(b[i + 3]) << 24)) }
        var i = 0
        while i < b.count, b[i] != 0 {
            guard let nameEnd = b[i...].firstIndex(of: 0), let typeEnd = b[(nameEnd + 1)...].firstIndex(of: 0),
                typeEnd + 5 <= b.count
            else { return nil }
            let name = String(decoding: b[i..<nameEnd], as: UTF8.self)
            let size = le(typeEnd + 1), value = typeEnd + 5
            guard size >= 0, value + size <= b.count else { return nil }
            if name == "dataWindow", size == 16 {
                let w = le(value + 8) - le(value) + 1, h = le(value + 12) - le(value + 4) + 1
                return w > 0 && h > 0 ? (w, h) : nil
            }
            i = value + size
        }
        return nil
    }

    /// The resolution line after a Radiance header's blank line ("-Y 480 +X 640" and its
    /// rotations: the number after Y is the height).
    private static func hdr(_ b: [UInt8]) -> (width: Int, height: Int)? {
        let text = String(decoding: b, as: UTF8.self)
        guard text.hasPrefix("#?"), let blank = text.range(of: "\n\n") else { return nil }
        let line = text[blank.upperBound...].prefix { $0 != "\n" }
        let parts = line.split(separator: " ")
        guard parts.count == 4 else { return nil }
        var width: Int?, height: Int?
        for k in [0, 2] {
            let axis = parts[k].last, n = Int(parts[k + 1])
            if axis == "X" { width = n } else if axis == "Y" { height = n }
        }
        guard let width, let height else { return nil }
        return (width, height)
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
