#if canImport(Glibc)
import Glibc
#endif

/// Turns a code's raw payload bytes into text, or decides it is binary.
///
/// ZBar is run with `ZBAR_CFG_BINARY`, so it hands over the bytes as encoded, except that a
/// symbol declaring its character set with an ECI designator is converted to UTF-8 by ZBar
/// itself (qrdectxt.c honours ECI even in binary mode; ZBar does not expose the ECI number).
/// ZBar's own guessing (Shift-JIS before ISO-8859-1, iconv accepting C1 controls) mislabels
/// Latin-1 text and turns binary payloads into text, so the policy lives here:
///
/// 1. valid UTF-8 (this includes every ECI-declared payload, already converted) → UTF-8;
/// 2. otherwise, no control bytes (C0 other than tab/CR/LF, DEL, and C1 0x80–0x9F) → ISO-8859-1
///    (the QR standard's default; C1 bytes are how real Shift-JIS text gives itself away);
/// 3. otherwise, a well-formed Shift-JIS sequence (JIS X 0208 lead bytes 0x81–0x9F/0xE0–0xEF with
///    valid trail bytes, half-width katakana, printable ASCII) → Shift-JIS via iconv;
/// 4. otherwise binary: nil.
///
/// Threading: stateless; call from any thread.
enum CodeText {
    /// The payload as text, or nil for binary payloads (see the policy above).
    static func string(from bytes: [UInt8]) -> String? {
        if let utf8 = String(validating: bytes, as: UTF8.self) { return utf8 }
        if isLatin1Text(bytes) { return String(bytes.map { Character(Unicode.Scalar($0)) }) }
        if isShiftJISText(bytes) { return convert(bytes, from: "SHIFT_JIS") }
        return nil
    }

    static func isLatin1Text(_ bytes: [UInt8]) -> Bool {
        bytes.allSatisfy { b in (b >= 0x20 && b < 0x7F) || b == 0x09 || b == 0x0A || b == 0x0D || b >= 0xA0 }
    }

    static func isShiftJISText(_ bytes: [UInt8]) -> Bool {
        var i = 0
        var sawDoubleByte = false
        while i < bytes.count {
            let b = bytes[i]
            if (b >= 0x20 && b < 0x7F) || b == 0x09 || b == 0x0A || b == 0x0D || (b >= 0xA1 && b <= 0xDF) {
                i += 1
            } else if (b >= 0x81 && b <= 0x9F) || (b >= 0xE0 && b <= 0xEF) {
                guard i + 1 < bytes.count else { return false }
                let t = bytes[i + 1]
                guard (t >= 0x40 && t <= 0x7E) || (t >= 0x80 && t <= 0xFC) else { return false }
                sawDoubleByte = true
                i += 2
            } else {
                return false
            }
        }
        return sawDoubleByte
    }

    /// Converts with glibc's iconv (`iconv_open`, `iconv`) to UTF-8; nil when iconv rejects the bytes.
    static func convert(_ bytes: [UInt8], from charset: String) -> String? {
        let cd = iconv_open("UTF-8", charset)
        guard cd != iconv_t(bitPattern: -1) else { return nil }
        defer { iconv_close(cd) }
        var input = bytes.map { CChar(bitPattern: $0) }
        var output = [CChar](repeating: 0, count: bytes.count * 4 + 4)
        let ok = input.withUnsafeMutableBufferPointer { inBuf -> Bool in
            output.withUnsafeMutableBufferPointer { outBuf -> Bool in
                var inPtr: UnsafeMutablePointer<CChar>? = inBuf.baseAddress
                var inLeft = inBuf.count
                var outPtr: UnsafeMutablePointer<CChar>? = outBuf.baseAddress
                var outLeft = outBuf.count
                let r = iconv(cd, &inPtr, &inLeft, &outPtr, &outLeft)
                guard r != -1 && inLeft == 0 else { return false }
                outBuf[outBuf.count - outLeft] = 0
                return true
            }
        }
        guard ok else { return nil }
        let end = output.firstIndex(of: 0) ?? output.count
        return String(validating: output[..<end].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
