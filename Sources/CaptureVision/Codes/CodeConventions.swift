/// One payload form per symbology, whichever decoder read the code, chosen to match what
/// AVFoundation's `AVMetadataMachineReadableCodeObject.stringValue` delivers where it delivers
/// the type (Docs/codes.md lists every convention and the reasons):
///
/// - EAN-13, EAN-8, UPC-A, UPC-E: all digits with the check digit. UPC-A is a 12-digit `.upca`
///   when the caller asked for `.upca`; otherwise it is what AVFoundation makes of it, an
///   EAN-13 with a leading 0 (GS1 defines them as the same number). UPC-E stays 8 digits.
/// - Code 39: the data characters as encoded, no check character removed (Code 39 does not say
///   whether its last character is one); a symbol whose every `$ % / +` pair is a valid
///   full-ASCII pair, with at least one, is read in full-ASCII (extended) mode: `+A+B` is `ab`.
/// - Codabar: with its start and stop characters (`A1234B`), as ZBar reports them.
/// - GS1 (Code 128, Data Matrix, QR): the leading FNC1 is not part of the payload, a separator
///   FNC1 is GS (0x1D); GS1 DataBar is its element string, AI 01 and the 14-digit GTIN.
///
/// Threading: stateless; call from any thread.
enum CodeConventions {
    /// `symbol` in its convention's form for a detector that looks for `requested`.
    static func normalised(_ symbol: ScannedSymbol, requested: Set<MetadataObjectType>) -> ScannedSymbol {
        var s = symbol
        switch s.type {
        case .ean13 where requested.contains(.upca) && s.bytes.count == 13 && s.bytes.first == UInt8(ascii: "0"):
            s.type = .upca
            s.bytes.removeFirst()
            s.decoderText = nil
        case .upca where !requested.contains(.upca) && s.bytes.count == 12:
            s.type = .ean13
            s.bytes.insert(UInt8(ascii: "0"), at: 0)
            s.decoderText = nil
        case .ean13 where s.bytes.count == 13 && (s.bytes.starts(with: Array("978".utf8)) || s.bytes.starts(with: Array("979".utf8))):
            // ZBar reports a Bookland EAN-13 as ISBN when asked for ISBN; zxing-cpp does not.
            if requested.contains(.isbn13) {
                s.type = .isbn13
            } else if requested.contains(.isbn10), s.bytes.starts(with: Array("978".utf8)) {
                s.type = .isbn10
                s.bytes = isbn10(fromEAN13: s.bytes)
                s.decoderText = nil
            }
        case .code39:
            if let extended = code39FullASCII(s.bytes) {
                s.bytes = extended
                s.decoderText = nil
            }
        default: break
        }
        return s
    }

    /// The ISBN-10 of a 978-prefixed EAN-13: its nine digits after 978, then the mod-11 check
    /// character (`X` for 10).
    static func isbn10(fromEAN13 digits: [UInt8]) -> [UInt8] {
        let body = Array(digits[3..<12])
        var sum = 0
        for (i, d) in body.enumerated() { sum += (10 - i) * Int(d - UInt8(ascii: "0")) }
        let check = (11 - sum % 11) % 11
        return body + [check == 10 ? UInt8(ascii: "X") : UInt8(ascii: "0") + UInt8(check)]
    }

    /// The number an EAN/UPC-family symbol carries as 13 digits (UPC-A and UPC-E expanded,
    /// EAN-8 and ISBN-10 as they are), for telling two reads of one number from two numbers.
    static func gtin(_ s: ScannedSymbol) -> [UInt8] {
        switch s.type {
        case .upca: return [UInt8(ascii: "0")] + s.bytes
        case .upce: return upcEToA(s.bytes).map { [UInt8(ascii: "0")] + $0 } ?? s.bytes
        default: return s.bytes
        }
    }

    /// UPC-E (8 digits: number system, six digits, check digit) expanded to its UPC-A; nil when
    /// the bytes are not 8 digits.
    static func upcEToA(_ e: [UInt8]) -> [UInt8]? {
        guard e.count == 8, e.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        let c = Array(e[1...6]), last = c[5]
        let zeros = { (n: Int) in [UInt8](repeating: UInt8(ascii: "0"), count: n) }
        let body: [UInt8]
        switch last {
        case UInt8(ascii: "0")...UInt8(ascii: "2"): body = Array(c[0...1]) + [last] + zeros(4) + Array(c[2...4])
        case UInt8(ascii: "3"): body = Array(c[0...2]) + zeros(5) + Array(c[3...4])
        case UInt8(ascii: "4"): body = Array(c[0...3]) + zeros(5) + [c[4]]
        default: body = Array(c[0...4]) + zeros(4) + [last]
        }
        return [e[0]] + body + [e[7]]
    }

    /// The EAN/UPC family: numbers whose misreads are other valid numbers (one check digit).
    static let retailTypes: Set<MetadataObjectType> = [.ean13, .ean8, .upca, .upce, .isbn10, .isbn13]

    /// The full-ASCII reading of Code 39 data characters, or nil when they hold no shift pair or
    /// an invalid one (then the data is plain Code 39 and stays as it is).
    ///
    /// The table (ISO/IEC 16388 annex): `$A`–`$Z` are 0x01–0x1A; `%A`–`%E` 0x1B–0x1F; `%F`–`%J`
    /// `;<=>?`; `%K`–`%O` `[\]^_`; `%P`–`%T` `{|}~` and DEL; `%U` NUL; `%V` `@`; `%W` `` ` ``;
    /// `%X`–`%Z` DEL; `/A`–`/O` `!"#$%&'()*+,-./`; `/Z` `:`; `+A`–`+Z` `a`–`z`.
    static func code39FullASCII(_ data: [UInt8]) -> [UInt8]? {
        let dollar = UInt8(ascii: "$"), percent = UInt8(ascii: "%"), slash = UInt8(ascii: "/"), plus = UInt8(ascii: "+")
        guard data.contains(where: { [dollar, percent, slash, plus].contains($0) }) else { return nil }
        var out: [UInt8] = []
        var i = 0
        while i < data.count {
            let c = data[i]
            guard [dollar, percent, slash, plus].contains(c) else {
                out.append(c)
                i += 1
                continue
            }
            guard i + 1 < data.count else { return nil }
            let n = data[i + 1]
            guard n >= UInt8(ascii: "A"), n <= UInt8(ascii: "Z") else { return nil }
            let k = n - UInt8(ascii: "A")  // 0 for A … 25 for Z
            switch c {
            case dollar: out.append(k + 1)
            case plus: out.append(UInt8(ascii: "a") + k)
            case slash:
                if k <= 14 {
                    out.append(UInt8(ascii: "!") + k)
                } else if n == UInt8(ascii: "Z") {
                    out.append(UInt8(ascii: ":"))
                } else {
                    return nil
                }
            default:
                let table: [UInt8] = [
                    0x1B, 0x1C, 0x1D, 0x1E, 0x1F, 0x3B, 0x3C, 0x3D, 0x3E, 0x3F, 0x5B, 0x5C, 0x5D, 0x5E, 0x5F, 0x7B, 0x7C,
                    0x7D, 0x7E, 0x7F, 0x00, 0x40, 0x60, 0x7F, 0x7F, 0x7F,
                ]
                out.append(table[Int(k)])
            }
            i += 2
        }
        return out
    }
}
