#if canImport(Glibc)
import Glibc
#endif

/// Turns a code's raw payload bytes into text, or decides it is binary.
///
/// The bytes come from ZBar (run with `ZBAR_CFG_BINARY`: as encoded, except that ZBar converts
/// an ECI-declared payload to UTF-8 itself and does not say so) or from zxing-cpp (`bytes()`:
/// never converted, the ECI designators reported beside them). The policy:
///
/// 1. C0 control bytes other than tab, CR and LF → binary: nil.
/// 2. ECI designators present → each segment in its declared character set (an unknown one,
///    or bytes invalid in it → nil).
/// 3. Otherwise ZXing's documented guess (`StringUtils.guessEncoding`, see `guessEncoding`):
///    UTF-8 when the bytes are valid UTF-8 with a multi-byte character; Shift_JIS when a word of
///    3 or more half-width katakana or double-byte characters shows; between ISO-8859-1 and
///    Shift_JIS, Shift_JIS when exactly two half-width katakana form the only katakana word or
///    a tenth or more of the bytes are ISO-8859-1 symbols (0xA0–0xBF, ×, ÷); then whichever
///    of ISO-8859-1, Shift_JIS, UTF-8 the bytes can be.
/// 4. Shift_JIS is decoded as CP932: bytes below 0x80 are ASCII (0x5C is `\`, not `¥`: JIS X 0201
///    Roman makes it the yen sign, but codes are written on PCs where it is a backslash, and
///    MEBKM/WIFI payloads use it as their escape), 0xA1–0xDF are half-width katakana.
/// 5. A second opinion (zxing-cpp's own text for a code it read) is taken only where rules
///    2–4 found no text but zxing-cpp calls the content text.
///
/// Threading: stateless; call from any thread.
enum CodeText {
    /// A character set this policy can name.
    enum Charset: Equatable, Sendable {
        case utf8, latin1, shiftJIS
        /// Any other, by its iconv name.
        case iconv(String)
    }

    /// One stretch of payload bytes in a character set an ECI designator declared.
    struct ECISegment: Equatable, Sendable {
        /// The ECI assignment number (ISO/IEC 15424: 3 ISO-8859-1, 20 Shift_JIS, 26 UTF-8, …).
        var eci: Int
        var bytes: [UInt8]
    }

    /// The payload as text, or nil for binary payloads (see the policy above). `eci`: the
    /// declared segments when the symbol carries ECI designators; `secondOpinion`: another
    /// decoder's text for the same symbol.
    static func string(from bytes: [UInt8], eci: [ECISegment]? = nil, secondOpinion: String? = nil) -> String? {
        guard !hasControlBytes(bytes) else { return nil }
        let own: String?
        if let eci, !eci.isEmpty {
            var text = ""
            for segment in eci {
                guard let charset = charset(eci: segment.eci), let part = decode(segment.bytes, as: charset) else {
                    return secondOpinion
                }
                text += part
            }
            own = text
        } else {
            own = guessEncoding(bytes).flatMap { decode(bytes, as: $0) }
        }
        return own ?? secondOpinion
    }

    /// C0 controls other than tab, CR and LF: what text payloads never hold.
    static func hasControlBytes(_ bytes: [UInt8]) -> Bool {
        bytes.contains { $0 < 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D }
    }

    /// The character set ZXing's `StringUtils.guessEncoding` rules pick for bytes without an
    /// ECI (see the type's policy, rule 3); nil when the bytes fit none of the three.
    static func guessEncoding(_ bytes: [UInt8]) -> Charset? {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { return .utf8 }
        let utf8Valid = String(validating: bytes, as: UTF8.self) != nil
        let utf8MultiByte = bytes.contains { $0 >= 0xC0 }
        var latin1 = true, latin1Symbols = 0
        var sjis = true, katakana = 0, katakanaRun = 0, longestKatakanaRun = 0
        var doubleRun = 0, longestDoubleRun = 0
        var i = 0
        while i < bytes.count {
            let b = bytes[i]
            if b >= 0x80 && b < 0xA0 { latin1 = false }
            if (b >= 0xA0 && b < 0xC0) || b == 0xD7 || b == 0xF7 { latin1Symbols += 1 }
            if sjis {
                if b == 0x80 || b == 0xA0 || b > 0xEF {
                    sjis = false
                } else if b > 0xA0 && b < 0xE0 {
                    katakana += 1
                    katakanaRun += 1
                    longestKatakanaRun = max(longestKatakanaRun, katakanaRun)
                    doubleRun = 0
                } else if b > 0x7F {
                    // A double-byte lead: its trail byte is 0x40–0xFC, not 0x7F.
                    guard i + 1 < bytes.count, bytes[i + 1] >= 0x40, bytes[i + 1] != 0x7F, bytes[i + 1] <= 0xFC else {
                        sjis = false
                        i += 1
                        continue
                    }
                    let t = bytes[i + 1]
                    if t >= 0x80 && t < 0xA0 { latin1 = false }
                    if (t >= 0xA0 && t < 0xC0) || t == 0xD7 || t == 0xF7 { latin1Symbols += 1 }
                    doubleRun += 1
                    longestDoubleRun = max(longestDoubleRun, doubleRun)
                    katakanaRun = 0
                    i += 2
                    continue
                } else {
                    katakanaRun = 0
                    doubleRun = 0
                }
            }
            i += 1
        }
        if utf8Valid && utf8MultiByte { return .utf8 }
        if sjis && (longestKatakanaRun >= 3 || longestDoubleRun >= 3) { return .shiftJIS }
        if latin1 && sjis {
            let twoKatakana = longestKatakanaRun == 2 && katakana == 2
            return twoKatakana || latin1Symbols * 10 >= bytes.count ? .shiftJIS : .latin1
        }
        if latin1 { return .latin1 }
        if sjis { return .shiftJIS }
        if utf8Valid { return .utf8 }
        return nil
    }

    /// The character set of an ECI assignment number (ISO/IEC 15424 as AIM lists them); nil for
    /// 899 (binary) and numbers it does not know.
    static func charset(eci: Int) -> Charset? {
        switch eci {
        case 0, 2: return .iconv("CP437")
        case 1, 3: return .latin1
        case 4...13: return .iconv("ISO-8859-\(eci - 2)")
        case 15...18: return .iconv("ISO-8859-\(eci - 2)")
        case 20: return .shiftJIS
        case 21: return .iconv("CP1250")
        case 22: return .iconv("CP1251")
        case 23: return .iconv("CP1252")
        case 24: return .iconv("CP1256")
        case 25: return .iconv("UTF-16BE")
        case 26: return .utf8
        case 27, 170: return .iconv("ASCII")
        case 28: return .iconv("BIG5")
        case 29: return .iconv("GB18030")
        case 30: return .iconv("EUC-KR")
        default: return nil
        }
    }

    /// `bytes` decoded as `charset`; nil when they are not valid in it.
    static func decode(_ bytes: [UInt8], as charset: Charset) -> String? {
        switch charset {
        case .utf8: return String(validating: bytes, as: UTF8.self)
        case .latin1: return String(String.UnicodeScalarView(bytes.map { Unicode.Scalar($0) }))
        case .shiftJIS: return convert(bytes, from: "CP932")
        case .iconv(let name): return convert(bytes, from: name)
        }
    }

    /// Converts with glibc's iconv (`iconv_open`, `iconv`) to UTF-8; nil when iconv rejects the bytes.
    static func convert(_ bytes: [UInt8], from charset: String) -> String? {
        let cd = iconv_open("UTF-8", charset)
        guard cd != iconv_t(bitPattern: -1) else { return nil }
        defer { iconv_close(cd) }
        var input = bytes.map { CChar(bitPattern: $0) }
        var output = [CChar](repeating: 0, count: bytes.count * 4 + 4)
        let written = input.withUnsafeMutableBufferPointer { inBuf -> Int? in
            output.withUnsafeMutableBufferPointer { outBuf -> Int? in
                var inPtr: UnsafeMutablePointer<CChar>? = inBuf.baseAddress
                var inLeft = inBuf.count
                var outPtr: UnsafeMutablePointer<CChar>? = outBuf.baseAddress
                var outLeft = outBuf.count
                let r = iconv(cd, &inPtr, &inLeft, &outPtr, &outLeft)
                guard r != -1 && inLeft == 0 else { return nil }
                return outBuf.count - outLeft
            }
        }
        guard let written else { return nil }
        return String(validating: output[..<written].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
