/// The EXIF orientation of a still image, read and applied the way OpenCV 4.6's `imread` does
/// (its `ExifReader` and `ExifTransform`), so that the JPEG and PNG decoded without OpenCV
/// (`cvb_still_read`) come out as `cv::imread` would give them.
///
/// Threading: a value type; use from any thread.
package struct ExifOrientation: Equatable, Sendable {
    /// The tag's value: 1 upright … 8, as EXIF numbers them (0th row and column: 1 top-left,
    /// 2 top-right, 3 bottom-right, 4 bottom-left, 5 left-top, 6 right-top, 7 right-bottom,
    /// 8 left-bottom).
    package var value: Int

    /// Reads tag 0x0112 from an EXIF block (a TIFF header and its first IFD) as OpenCV's
    /// parser does: byte order "II" little-endian, anything else big-endian; the IFD's entries
    /// in order, the first orientation kept; and, as there, an entry of a tag OpenCV knows
    /// whose value lies outside the block ends the walk (keeping what came before). Nil when
    /// there is no orientation.
    package init?(exif bytes: [UInt8]) {
        var reader = Reader(bytes: bytes)
        guard let found = reader.orientation() else { return nil }
        value = found
    }

    package init(value: Int) { self.value = value }

    /// The rotation (clockwise) and then left-right mirroring `Imaging.rotateMirror` applies
    /// for this orientation; nil when nothing is to be done (1, or a value EXIF does not
    /// define). The same pixel moves as OpenCV's flips and transposes.
    package var transform: (degrees: Int32, mirrored: Bool)? {
        switch value {
        case 2: (0, true)  // flip left-right
        case 3: (180, false)  // flip both ways
        case 4: (180, true)  // flip top-bottom
        case 5: (90, true)  // transpose
        case 6: (90, false)  // transpose, flip left-right
        case 7: (270, true)  // transpose, flip both ways
        case 8: (270, false)  // transpose, flip top-bottom
        default: nil
        }
    }

    /// OpenCV's `ExifReader` over one block (its bounds: a 16-bit read at `o` needs `o + 1`
    /// inside the block, a 32-bit one `o + 3`).
    private struct Reader {
        let bytes: [UInt8]
        var littleEndian: Bool { bytes.count > 1 && bytes[0] == bytes[1] && bytes[0] == UInt8(ascii: "I") }

        func u16(_ o: Int) -> Int? {
            guard o >= 0, o + 1 < bytes.count else { return nil }
            let a = Int(bytes[o]), b = Int(bytes[o + 1])
            return littleEndian ? a | b << 8 : a << 8 | b
        }

        func u32(_ o: Int) -> Int? {
            guard o >= 0, o + 3 < bytes.count else { return nil }
            let b = (0..<4).map { Int(bytes[o + $0]) }
            return littleEndian ? b[0] | b[1] << 8 | b[2] << 16 | b[3] << 24 : b[0] << 24 | b[1] << 16 | b[2] << 8 | b[3]
        }

        /// Whether the value of the entry at `entry`, of a tag OpenCV reads, lies in the block.
        func valueReadable(tag: Int, entry: Int) -> Bool {
            func rationals(_ count: Int) -> Bool {
                guard let start = u32(entry + 8) else { return false }
                return (0..<count).allSatisfy { u32(start + 8 * $0) != nil && u32(start + 8 * $0 + 4) != nil }
            }
            switch tag {
            case 0x010E, 0x010F, 0x0110, 0x0131, 0x0132, 0x8298:  // strings
                guard let size = u32(entry + 4) else { return false }
                // As OpenCV: a short string is taken from offset 8 of the block, not of the entry.
                var offset = 8
                if size > 4 {
                    guard let o = u32(entry + 8) else { return false }
                    offset = o
                }
                return offset <= bytes.count && offset + size <= bytes.count
            case 0x0112, 0x0128, 0x0213: return u16(entry + 8) != nil
            case 0x011A, 0x011B: return rationals(1)
            case 0x013E: return rationals(2)
            case 0x013F, 0x0214: return rationals(6)
            case 0x0211: return rationals(3)
            default: return true  // not read (EXIF_OFFSET and tags OpenCV does not know)
            }
        }

        mutating func orientation() -> Int? {
            guard u16(2) == 0x2A, let ifd = u32(4), let count = u16(ifd) else { return nil }
            var entry = ifd + 2
            for _ in 0..<count {
                guard let tag = u16(entry), valueReadable(tag: tag, entry: entry) else { return nil }
                if tag == 0x0112 { return u16(entry + 8) }
                entry += 12
            }
            return nil
        }
    }
}
