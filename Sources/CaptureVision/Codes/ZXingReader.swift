import CVBridge
import Foundation

/// zxing-cpp's format bits (`ZXing::BarcodeFormat` in BarcodeFormat.h) for the code types
/// CaptureKit lets zxing-cpp read: the 2-D ones, and the linear ones but GS1 DataBar (zxing-cpp
/// 1.4 aborts on DataBar symbols; ZBar reads them).
enum ZXingFormat {
    static let matrix: [(MetadataObjectType, UInt32)] = [
        (.qr, 1 << 13), (.microQR, 1 << 16), (.dataMatrix, 1 << 7), (.aztec, 1 << 0), (.pdf417, 1 << 12),
    ]
    static let linear: [(MetadataObjectType, UInt32)] = [
        (.codabar, 1 << 1), (.code39, 1 << 2), (.code93, 1 << 3), (.code128, 1 << 4), (.ean8, 1 << 8),
        (.ean13, 1 << 9), (.interleaved2of5, 1 << 10), (.upca, 1 << 14), (.upce, 1 << 15),
    ]
    static var table: [(MetadataObjectType, UInt32)] { matrix + linear }
    /// Every type zxing-cpp reads here.
    static var types: Set<MetadataObjectType> { Set(table.map(\.0)) }
    static var matrixTypes: Set<MetadataObjectType> { Set(matrix.map(\.0)) }
    static var linearTypes: Set<MetadataObjectType> { Set(linear.map(\.0)) }
    /// The mask for `types` (0 when zxing-cpp reads none of them).
    static func mask(_ types: Set<MetadataObjectType>) -> UInt32 {
        table.reduce(0) { types.contains($1.0) ? $0 | $1.1 : $0 }
    }
    static func type(zxing: UInt32) -> MetadataObjectType? { table.first { $0.1 == zxing }?.0 }
}

/// The hints of one zxing-cpp read (`cvb_zxing_hints`: `ZXing::DecodeHints`).
struct ZXingHints: Hashable, Sendable {
    var types: Set<MetadataObjectType>
    var tryHarder: Bool
    var tryRotate: Bool
    var tryDownscale: Bool
    /// The image is a single upright code with a quiet zone (`setIsPure`).
    var isPure = false

    /// zxing-cpp's library defaults (`cvb_zxing_default_hints`) for `types`.
    static func defaults(_ types: Set<MetadataObjectType>) -> ZXingHints {
        let d = cvb_zxing_default_hints()
        return ZXingHints(
            types: types, tryHarder: d.try_harder != 0, tryRotate: d.try_rotate != 0, tryDownscale: d.try_downscale != 0,
            isPure: d.is_pure != 0)
    }
}

/// A zxing-cpp reader (`cvb_zxing_reader`: `ZXing::ReadBarcodes` and its last results).
///
/// Threading: not thread-safe; one thread at a time.
final class ZXingReader {
    private let handle: OpaquePointer

    /// Creates a reader (`cvb_zxing_reader_create`).
    init() throws(CaptureError) {
        var err = cvb_error()
        guard let h = cvb_zxing_reader_create(&err) else {
            throw CaptureError(.outOfMemory, "cannot create a zxing-cpp reader", bridge: err)
        }
        handle = h
    }

    deinit { cvb_zxing_reader_destroy(handle) }

    /// Reads a gray image (`cvb_zxing_read` → `ZXing::ReadBarcodes`) and copies every valid
    /// result out, corners clockwise from the symbol's top-left as zxing-cpp gives them.
    ///
    /// The 2-D types are read in one call, every symbol of the image. The linear types are read
    /// in a call of their own that stops at the first symbol (`setMaxNumberOfSymbols(1)`):
    /// zxing-cpp 1.4 aborts the process when one read finds the same linear code twice (two
    /// identical labels in a picture), a failed assertion nothing can catch. ZBar reads every
    /// linear code of the frame; zxing-cpp adds the one ZBar missed.
    func read(_ gray: PixelBuffer, hints: ZXingHints) throws(CaptureError) -> [ScannedSymbol] {
        let matrix = ZXingFormat.mask(hints.types.intersection(ZXingFormat.matrixTypes))
        let linear = ZXingFormat.mask(hints.types.intersection(ZXingFormat.linearTypes))
        var out: [ScannedSymbol] = []
        if matrix != 0 { out += try read(gray, mask: matrix, maxSymbols: 0, hints: hints) }
        if linear != 0 { out += try read(gray, mask: linear, maxSymbols: 1, hints: hints) }
        return out
    }

    private func read(_ gray: PixelBuffer, mask: UInt32, maxSymbols: Int32, hints: ZXingHints) throws(CaptureError)
        -> [ScannedSymbol]
    {
        var h = cvb_zxing_default_hints()
        h.formats = mask
        h.try_harder = hints.tryHarder ? 1 : 0
        h.try_rotate = hints.tryRotate ? 1 : 0
        h.try_downscale = hints.tryDownscale ? 1 : 0
        h.is_pure = hints.isPure ? 1 : 0
        h.max_number_of_symbols = maxSymbols
        // Codabar with its start and stop characters, as ZBar reports it (`CodeConventions`).
        h.return_codabar_start_end = 1
        var err = cvb_error()
        let n = gray.withBridgeImage { image in cvb_zxing_read(handle, &image, &h, &err) }
        guard n >= 0 else { throw CaptureError(.decodeFailed, "zxing-cpp could not read the image", bridge: err) }
        var out: [ScannedSymbol] = []
        for i in 0..<n {
            var info = cvb_zxing_result()
            guard cvb_zxing_result_get(handle, i, &info, nil, 0, nil, 0, nil, 0) == 0,
                let type = ZXingFormat.type(zxing: info.format)
            else { continue }
            var bytes = [UInt8](repeating: 0, count: Int(info.bytes_length))
            var withECI = [UInt8](repeating: 0, count: Int(info.bytes_eci_length))
            var text = [UInt8](repeating: 0, count: Int(info.text_length))
            _ = bytes.withUnsafeMutableBufferPointer { b in
                withECI.withUnsafeMutableBufferPointer { e in
                    text.withUnsafeMutableBufferPointer { t in
                        t.withMemoryRebound(to: CChar.self) { tc in
                            cvb_zxing_result_get(
                                handle, i, &info, b.baseAddress, Int32(b.count), e.baseAddress, Int32(e.count),
                                tc.baseAddress, Int32(tc.count))
                        }
                    }
                }
            }
            // A payload longer than the symbol's data can hold was read past its last bit
            // (zxing-cpp 1.4 takes Aztec padding after a binary shift for another one): refused,
            // not reported with bytes the symbol does not hold.
            if type == .aztec && !AztecCore.payloadFits(bytes, dataBits: Int(info.num_bits)) { continue }
            let xs = [info.xs.0, info.xs.1, info.xs.2, info.xs.3], ys = [info.ys.0, info.ys.1, info.ys.2, info.ys.3]
            // contentType 0 is Text, 2 Mixed (text with binary parts), 3 GS1, 4 ISO 15434.
            let isText = [0, 3, 4].contains(info.content_type)
            out.append(
                ScannedSymbol(
                    type: type, bytes: bytes, points: zip(xs, ys).map { CGPoint(x: Double($0), y: Double($1)) },
                    quality: 1, orientation: Int(info.orientation),
                    eci: info.has_eci != 0 ? Self.segments(eciBytes: withECI) : nil,
                    decoderText: isText ? String(validating: text, as: UTF8.self) : nil))
        }
        return out
    }

    /// The segments of zxing-cpp's `bytesECI()`: a symbology identifier ("]Q2"), then bytes with
    /// each ECI designator written as `\` and six digits and each literal backslash doubled.
    /// Bytes before the first designator count as ECI 3 (ISO-8859-1, the default). Nil when the
    /// text is not in that form.
    static func segments(eciBytes: [UInt8]) -> [CodeText.ECISegment]? {
        var i = eciBytes.first == UInt8(ascii: "]") ? 3 : 0
        var out: [CodeText.ECISegment] = []
        var current = CodeText.ECISegment(eci: 3, bytes: [])
        let backslash = UInt8(ascii: "\\")
        while i < eciBytes.count {
            let b = eciBytes[i]
            guard b == backslash else {
                current.bytes.append(b)
                i += 1
                continue
            }
            guard i + 1 < eciBytes.count else { return nil }
            if eciBytes[i + 1] == backslash {
                current.bytes.append(backslash)
                i += 2
                continue
            }
            guard i + 7 <= eciBytes.count,
                let eci = Int(String(decoding: eciBytes[(i + 1)..<(i + 7)], as: UTF8.self))
            else { return nil }
            if !current.bytes.isEmpty { out.append(current) }
            current = CodeText.ECISegment(eci: eci, bytes: [])
            i += 7
        }
        if !current.bytes.isEmpty || out.isEmpty { out.append(current) }
        return out
    }
}
