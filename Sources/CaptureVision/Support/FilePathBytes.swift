#if canImport(Glibc)
import Glibc
#endif

/// File paths held in Swift strings without losing bytes.
///
/// On Linux a path is bytes and need not be UTF-8 (`caf\xE9.png` from a Latin-1 system), but a
/// `String` holds only Unicode, and Foundation and `CommandLine.arguments` replace such bytes
/// with U+FFFD, so the file can no longer be opened. Here a byte that is not part of valid UTF-8
/// is carried as the private-use scalar U+F700 + byte (U+F780…U+F7FF); a name that really holds
/// one of those scalars has its UTF-8 bytes carried the same way, so every path round-trips.
/// Input files, and files written through `AtomicFile` and `VideoFileWriter`, reach C through
/// `withCString`; names listed from a folder come from `string`.
/// Printed, the carried bytes are escaped as `\xNN` (cvcam's `TerminalText.escaped`).
///
/// Threading: stateless; call from any thread.
public enum FilePathBytes {
    /// Scalars that carry one byte each: U+F780…U+F7FF for bytes 0x80…0xFF.
    public static let carriedBytes: ClosedRange<UInt32> = 0xF780...0xF7FF

    /// The byte a scalar carries, or `nil` for any other scalar.
    public static func carriedByte(_ scalar: Unicode.Scalar) -> UInt8? {
        carriedBytes.contains(scalar.value) ? UInt8(scalar.value - 0xF700) : nil
    }

    /// `bytes` (a path or a name, without its NUL) as a string that `bytes(_:)` turns back into them.
    public static func string(_ bytes: some Collection<UInt8>) -> String {
        var out = String.UnicodeScalarView()
        var input = Array(bytes)[...]
        // One scalar at a time, so an undecodable byte is known exactly and carried alone.
        while let first = input.first {
            var decoder = UTF8()
            var one = input.makeIterator()
            if case .scalarValue(let scalar) = decoder.decode(&one), !carriedBytes.contains(scalar.value) {
                out.append(scalar)
                input = input.dropFirst(UTF8.width(scalar))
            } else {
                // Not UTF-8, or UTF-8 for a carrying scalar: its first byte is ≥ 0x80, carried alone.
                out.append(Unicode.Scalar(0xF700 + UInt32(first))!)
                input = input.dropFirst()
            }
        }
        return String(out)
    }

    /// The bytes `path` stands for: carried bytes as themselves, everything else as UTF-8.
    public static func bytes(_ path: String) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(path.utf8.count)
        for scalar in path.unicodeScalars {
            if let byte = carriedByte(scalar) { out.append(byte) } else { out.append(contentsOf: String(scalar).utf8) }
        }
        return out
    }

    /// Calls `body` with `path`'s bytes as a NUL-terminated C string, for `open`, `stat` and the shim.
    public static func withCString<R, E: Error>(_ path: String, _ body: (UnsafePointer<CChar>) throws(E) -> R) throws(E) -> R {
        var bytes = bytes(path).map { CChar(bitPattern: $0) }
        bytes.append(0)
        return try bytes.withUnsafeBufferPointer { (buffer) throws(E) -> R in try body(buffer.baseAddress!) }
    }

    /// The names in the folder at `path`, as strings that open the same files (`opendir`,
    /// `readdir`; "." and ".." left out). `nil` with `errno` set when the folder cannot be read.
    public static func contentsOfDirectory(_ path: String) -> [String]? {
        guard let dir = withCString(path, { opendir($0) }) else { return nil }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                Array(raw.prefix { $0 != 0 })
            }
            if name == [0x2E] || name == [0x2E, 0x2E] { continue }
            names.append(string(name))
        }
        return names
    }
}
