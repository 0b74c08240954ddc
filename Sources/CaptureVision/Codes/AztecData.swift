/// The data of an Aztec symbol (ISO/IEC 24778 §7), decoded by cvcam from its module grid: the
/// layers' bits in reading order, Reed–Solomon correction over the field the layer count names,
/// bit unstuffing, and the character modes (Upper, Lower, Mixed, Punct, Digit, binary shift,
/// FLG(n) for FNC1 and ECI).
///
/// zxing-cpp 1.4 takes the padding after the last character for more data when it looks like a
/// binary shift and returns bytes the symbol does not hold; `AztecCore.payloadFits` refuses such
/// a read, and this decoder reads the symbol instead: the padding (fewer ones than a codeword
/// at the end of the unstuffed bits) ends the data.
///
/// Threading: stateless; call from any thread.
enum AztecData {
    /// A decoded payload: its bytes (FNC1 as GS, 0x1D; a leading FNC1 that marks GS1 dropped)
    /// and its ECI segments when the symbol declares any.
    struct Payload: Equatable, Sendable {
        var bytes: [UInt8]
        var eci: [CodeText.ECISegment]?
    }

    /// The payload of `symbol` (a data symbol, not a rune) whose modules `dark(x, y)` gives, x
    /// right and y down from the upright symbol's top-left module; nil when the codewords do
    /// not correct or the bits do not parse.
    static func decode(_ symbol: AztecCore.Symbol, dark: (Int, Int) -> Bool) -> Payload? {
        guard symbol.rune == nil, symbol.layers >= 1 else { return nil }
        let wordSize = AztecCore.wordSize(layers: symbol.layers)
        guard let field = ReedSolomon.aztec(wordSize: wordSize) else { return nil }
        let raw = bits(compact: symbol.compact, layers: symbol.layers, dark: dark)
        let total = raw.count / wordSize, k = symbol.dataCodewords
        guard k >= 1, k < total else { return nil }
        // The codewords end at the innermost layer's end; the first raw.count % wordSize bits
        // (in the outermost layer) are unused.
        var words = [Int](repeating: 0, count: total)
        var index = raw.count % wordSize
        for w in 0..<total {
            for _ in 0..<wordSize {
                words[w] = words[w] << 1 | (raw[index] ? 1 : 0)
                index += 1
            }
        }
        guard field.correct(&words, checkWords: total - k) else { return nil }
        guard let stream = unstuffed(Array(words[0..<k]), wordSize: wordSize) else { return nil }
        return parse(stream, wordSize: wordSize)
    }

    /// The data layers' bits in reading order: outermost layer first, each layer counter-
    /// clockwise from its top-left (down the left side, along the bottom, up the right, back
    /// along the top), two modules across the layer at a time, the outer one first. A
    /// full-range symbol's reference grid lines (every 16th module from the centre) are skipped.
    static func bits(compact: Bool, layers: Int, dark: (Int, Int) -> Bool) -> [Bool] {
        // Coordinates without the grid lines: `base` modules a side, then mapped onto the symbol.
        let base = (compact ? 11 : 14) + 4 * layers
        var map = Array(0..<base)
        if !compact {
            let dimension = base + 1 + 2 * ((base / 2 - 1) / 15)
            let half = base / 2, centre = dimension / 2
            for i in 0..<half {
                let away = i + i / 15 + 1  // modules out from the centre line, grid lines skipped
                map[half - 1 - i] = centre - away
                map[half + i] = centre + away
            }
        }
        var out: [Bool] = []
        out.reserveCapacity(((compact ? 88 : 112) + 16 * layers) * layers)
        for layer in 0..<layers {
            let low = 2 * layer, high = base - 1 - low
            let side = high - low - 1  // dominoes per side
            var left: [Bool] = [], bottom: [Bool] = [], right: [Bool] = [], top: [Bool] = []
            for j in 0..<side {
                for k in 0..<2 {
                    left.append(dark(map[low + k], map[low + j]))
                    bottom.append(dark(map[low + j], map[high - k]))
                    right.append(dark(map[high - k], map[high - j]))
                    top.append(dark(map[high - j], map[low + k]))
                }
            }
            out += left + bottom + right + top
        }
        return out
    }

    /// The data codewords' bits with the stuffing removed (§7.3.1.2): a word of all zeros or all
    /// ones is invalid; one whose first m−1 bits are equal carries only those. Nil on an invalid word.
    static func unstuffed(_ words: [Int], wordSize m: Int) -> [Bool]? {
        let ones = (1 << m) - 1
        var out: [Bool] = []
        out.reserveCapacity(words.count * m)
        for w in words {
            if w == 0 || w == ones { return nil }
            if w == 1 || w == ones - 1 {
                out += [Bool](repeating: w != 1, count: m - 1)
                continue
            }
            for b in stride(from: m - 1, through: 0, by: -1) { out.append(w >> b & 1 == 1) }
        }
        return out
    }

    /// The character modes.
    enum Mode { case upper, lower, mixed, punct, digit }

    /// What a code means in a mode.
    enum Code: Equatable {
        case text([UInt8])
        case latch(Mode)
        case shift(Mode)
        case binaryShift
        case flag
    }

    /// ISO/IEC 24778 table 2, one mode at a time.
    static func code(_ value: Int, in mode: Mode) -> Code {
        let ascii = { (s: String) in Code.text(Array(s.utf8)) }
        switch mode {
        case .upper, .lower:
            switch value {
            case 0: return .shift(.punct)
            case 1: return ascii(" ")
            case 2...27: return .text([UInt8((mode == .upper ? 65 : 97) + value - 2)])
            case 28: return mode == .upper ? .latch(.lower) : .shift(.upper)
            case 29: return .latch(.mixed)
            case 30: return .latch(.digit)
            default: return .binaryShift
            }
        case .mixed:
            switch value {
            case 0: return .shift(.punct)
            case 1: return ascii(" ")
            case 2...14: return .text([UInt8(value - 1)])  // ^A … ^M
            case 15...19: return .text([UInt8(value + 12)])  // ^[ ^\ ^] ^^ ^_
            case 20...27: return .text([[64, 92, 94, 95, 96, 124, 126, 127][value - 20]])  // @ \ ^ _ ` | ~ DEL
            case 28: return .latch(.lower)
            case 29: return .latch(.upper)
            case 30: return .latch(.punct)
            default: return .binaryShift
            }
        case .punct:
            let table = ["", "\r", "\r\n", ". ", ", ", ": ", "!", "\"", "#", "$", "%", "&", "'", "(", ")", "*", "+", ",",
                         "-", ".", "/", ":", ";", "<", "=", ">", "?", "[", "]", "{", "}"]
            if value == 0 { return .flag }
            if value == 31 { return .latch(.upper) }
            return ascii(table[value])
        case .digit:
            switch value {
            case 0: return .shift(.punct)
            case 1: return ascii(" ")
            case 2...11: return .text([UInt8(48 + value - 2)])
            case 12: return ascii(",")
            case 13: return ascii(".")
            case 14: return .latch(.upper)
            default: return .shift(.upper)
            }
        }
    }

    /// The characters of the unstuffed bit stream. The data ends where fewer bits than a
    /// codeword remain and all of them are ones (the padding, §7.3.1.2); a code that runs past
    /// the end otherwise is an error. After a shifted character, or a binary shift's bytes,
    /// reading returns to the mode the shift was made from (a shift made in a shifted mode
    /// returns to that shifted mode's own mode, as the standard's example sequences read).
    static func parse(_ bits: [Bool], wordSize: Int) -> Payload? {
        var i = 0
        func read(_ n: Int) -> Int? {
            guard i + n <= bits.count else { return nil }
            var v = 0
            for _ in 0..<n {
                v = v << 1 | (bits[i] ? 1 : 0)
                i += 1
            }
            return v
        }
        var bytes: [UInt8] = []
        var segments: [CodeText.ECISegment] = []
        var current = CodeText.ECISegment(eci: 3, bytes: [])
        func emit(_ b: [UInt8]) {
            bytes += b
            current.bytes += b
        }
        var latched = Mode.upper, mode = Mode.upper
        func padding() -> Bool { bits.count - i < wordSize && bits[i...].allSatisfy { $0 } }
        reading: while i < bits.count {
            // A tail shorter than a code is padding too (zxing-cpp 3 reads so).
            if padding() || bits.count - i < (mode == .digit ? 4 : 5) { break }
            guard let value = read(mode == .digit ? 4 : 5) else { return nil }
            let c = code(value, in: mode)
            // The mode after this code, unless it changes it.
            let back = latched
            switch c {
            case .text(let t):
                emit(t)
                mode = back
            case .latch(let m):
                latched = m
                mode = m
            case .shift(let m):
                latched = mode
                mode = m
            case .binaryShift:
                if padding() { break reading }  // the padding's ones read as a binary shift
                latched = mode
                guard var length = read(5) else { return nil }
                if length == 0 {
                    guard let long = read(11) else { return nil }
                    length = long + 31
                }
                for _ in 0..<length {
                    guard let b = read(8) else { return nil }
                    emit([UInt8(b)])
                }
                // Back to the mode the binary shift was made from.
                mode = latched
            case .flag:
                guard let n = read(3) else { return nil }
                if n == 0 {
                    emit([0x1D])  // FNC1
                } else if n <= 6 {
                    var eci = 0
                    for _ in 0..<n {
                        guard let d = read(4), d >= 2, d <= 11 else { return nil }
                        eci = eci * 10 + d - 2
                    }
                    if !current.bytes.isEmpty || !segments.isEmpty { segments.append(current) }
                    current = CodeText.ECISegment(eci: eci, bytes: [])
                } else {
                    return nil  // FLG(7) is reserved
                }
                mode = back
            }
        }
        guard !bytes.isEmpty else { return nil }
        var eci: [CodeText.ECISegment]?
        if current.eci != 3 || !segments.isEmpty {
            segments.append(current)
            eci = segments.filter { !$0.bytes.isEmpty }
        }
        // A leading FNC1 marks GS1 data: not part of the element string.
        if bytes.first == 0x1D && bytes.count > 1 {
            bytes.removeFirst()
            if var first = eci?.first, first.bytes.first == 0x1D {
                first.bytes.removeFirst()
                eci?[0] = first
            }
        }
        return Payload(bytes: bytes, eci: eci)
    }
}
