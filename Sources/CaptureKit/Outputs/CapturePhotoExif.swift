import Foundation

/// The EXIF block CaptureKit writes into its JPEG photos: an APP1 segment holding a little-endian
/// TIFF structure with IFD0 (Make, Model, Orientation, DateTime) and an Exif IFD (ExifVersion,
/// DateTimeOriginal, SubSecTimeOriginal, OffsetTimeOriginal, PixelXDimension, PixelYDimension,
/// UserComment).
///
/// Written in Swift rather than through libexif: the handful of tags is a few dozen lines, and
/// it keeps a C dependency out of the package. Tests read the result back with independent
/// readers (libexif's `exif` tool, Pillow).
///
/// Value type; thread-safe.
struct PhotoExif: Sendable {
    var make: String
    var model: String
    /// EXIF Orientation (1…8), see `orientation(rotation:mirrored:)`.
    var orientation: UInt16
    var dateTimeOriginal: Date
    var pixelWidth: Int
    var pixelHeight: Int
    /// Stored in UserComment with the ASCII character code (JSON is ASCII after escaping).
    var userComment: String?

    /// The EXIF Orientation that tells a viewer how to show stored (sensor) pixels so they look
    /// like the connection's output: rotate clockwise by `rotation`, then mirror left-right.
    static func orientation(rotation: Int32, mirrored: Bool) -> UInt16 {
        switch (((rotation % 360) + 360) % 360, mirrored) {
        case (0, false): 1
        case (0, true): 2  // flip left-right
        case (180, false): 3
        case (180, true): 4  // flip top-bottom
        case (90, true): 5  // transpose
        case (90, false): 6  // rotate 90° clockwise
        case (270, true): 7  // transverse
        case (270, false): 8  // rotate 270° clockwise
        default: 1
        }
    }

    /// The largest UserComment that still fits one APP1 segment with room for the other tags.
    static let maximumUserCommentBytes = 60_000

    // TIFF field types.
    private enum FieldType: UInt16 { case ascii = 2, short = 3, long = 4, undefined = 7 }
    private struct Entry {
        var tag: UInt16
        var type: FieldType
        var count: UInt32
        var bytes: [UInt8]
    }

    /// The APP1 segment, marker included (FF E1, length, "Exif\0\0", TIFF).
    func app1Segment() -> [UInt8] {
        let (date, subsec, offset) = Self.dateStrings(dateTimeOriginal)
        var ifd0 = [
            Self.ascii(0x010F, make), Self.ascii(0x0110, model),
            Entry(tag: 0x0112, type: .short, count: 1, bytes: Self.le16(orientation)),
            Self.ascii(0x0132, date),
        ]
        var exif = [
            Entry(tag: 0x9000, type: .undefined, count: 4, bytes: Array("0232".utf8)),
            Self.ascii(0x9003, date),
            Self.ascii(0x9011, offset),
            Self.ascii(0x9291, subsec),
            Entry(tag: 0xA002, type: .long, count: 1, bytes: Self.le32(UInt32(pixelWidth))),
            Entry(tag: 0xA003, type: .long, count: 1, bytes: Self.le32(UInt32(pixelHeight))),
        ]
        if let userComment {
            let text = Array(userComment.utf8.prefix(Self.maximumUserCommentBytes))
            let bytes = Array("ASCII".utf8) + [0, 0, 0] + text
            exif.append(Entry(tag: 0x9286, type: .undefined, count: UInt32(bytes.count), bytes: bytes))
        }
        exif.sort { $0.tag < $1.tag }

        // IFD0 starts right after the 8-byte TIFF header; the Exif IFD follows IFD0 and its data.
        let pointerEntry = Entry(tag: 0x8769, type: .long, count: 1, bytes: [0, 0, 0, 0])
        ifd0.append(pointerEntry)
        ifd0.sort { $0.tag < $1.tag }
        let exifOffset = 8 + Self.size(of: ifd0)
        if let i = ifd0.firstIndex(where: { $0.tag == 0x8769 }) { ifd0[i].bytes = Self.le32(UInt32(exifOffset)) }

        var tiff: [UInt8] = [0x49, 0x49, 0x2A, 0x00] + Self.le32(8)
        tiff += Self.encode(ifd0, at: 8)
        tiff += Self.encode(exif, at: exifOffset)

        let payload = Array("Exif".utf8) + [0, 0] + tiff
        let length = UInt16(payload.count + 2)
        return [0xFF, 0xE1, UInt8(length >> 8), UInt8(length & 0xFF)] + payload
    }

    /// `jpeg` with the APP1 segment placed right after SOI (before OpenCV's JFIF APP0), or nil
    /// when `jpeg` does not start with SOI.
    func inserted(into jpeg: Data) -> Data? {
        guard jpeg.count > 2, jpeg[jpeg.startIndex] == 0xFF, jpeg[jpeg.startIndex + 1] == 0xD8 else { return nil }
        var out = Data(capacity: jpeg.count + 1024)
        out.append(contentsOf: [0xFF, 0xD8])
        out.append(contentsOf: app1Segment())
        out.append(jpeg[(jpeg.startIndex + 2)...])
        return out
    }

    private static func size(of entries: [Entry]) -> Int {
        2 + entries.count * 12 + 4 + entries.reduce(0) { $0 + ($1.bytes.count > 4 ? padded($1.bytes.count) : 0) }
    }

    private static func padded(_ n: Int) -> Int { n + (n & 1) }

    /// One IFD (count, 12-byte entries, next-IFD 0) followed by the values that do not fit in an entry.
    private static func encode(_ entries: [Entry], at offset: Int) -> [UInt8] {
        var head = le16(UInt16(entries.count))
        var data: [UInt8] = []
        let dataStart = offset + 2 + entries.count * 12 + 4
        for e in entries {
            head += le16(e.tag) + le16(e.type.rawValue) + le32(e.count)
            if e.bytes.count <= 4 {
                head += e.bytes + [UInt8](repeating: 0, count: 4 - e.bytes.count)
            } else {
                head += le32(UInt32(dataStart + data.count))
                data += e.bytes
                if e.bytes.count & 1 == 1 { data.append(0) }
            }
        }
        head += le32(0)
        return head + data
    }

    private static func ascii(_ tag: UInt16, _ text: String) -> Entry {
        // EXIF ASCII is 7-bit; replace anything else rather than write an invalid field.
        let bytes = text.unicodeScalars.map { $0.isASCII && $0.value != 0 ? UInt8($0.value) : UInt8(ascii: "?") } + [0]
        return Entry(tag: tag, type: .ascii, count: UInt32(bytes.count), bytes: bytes)
    }

    private static func le16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }
    private static func le32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8((v >> (8 * $0)) & 0xFF) } }

    /// "YYYY:MM:DD HH:MM:SS" in local time, the milliseconds, and the offset "+HH:MM".
    private static func dateStrings(_ date: Date) -> (String, String, String) {
        var t = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        localtime_r(&t, &parts)
        let text = String(
            format: "%04d:%02d:%02d %02d:%02d:%02d", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
            Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec))
        let millis = Int((date.timeIntervalSince1970 - Double(t)) * 1000) % 1000
        let offsetMinutes = parts.tm_gmtoff / 60
        let offset = String(
            format: "%@%02d:%02d", offsetMinutes < 0 ? "-" : "+", abs(offsetMinutes) / 60, abs(offsetMinutes) % 60)
        return (text, String(format: "%03d", millis), offset)
    }
}
