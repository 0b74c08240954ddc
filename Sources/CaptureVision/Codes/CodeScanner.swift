import CVBridge
import Foundation

/// ZBar's symbology numbers (`zbar_symbol_type_t`, exported by the shim) for the code types
/// CaptureKit names.
enum CodeSymbology {
    static let table: [(MetadataObjectType, Int32)] = [
        (.qr, cvb_zbar_qrcode), (.ean13, cvb_zbar_ean13), (.ean8, cvb_zbar_ean8), (.upca, cvb_zbar_upca),
        (.upce, cvb_zbar_upce), (.isbn10, cvb_zbar_isbn10), (.isbn13, cvb_zbar_isbn13), (.code128, cvb_zbar_code128),
        (.code93, cvb_zbar_code93), (.code39, cvb_zbar_code39), (.codabar, cvb_zbar_codabar),
        (.interleaved2of5, cvb_zbar_i25), (.dataBar, cvb_zbar_databar), (.dataBarExpanded, cvb_zbar_databar_exp),
        (.pdf417, cvb_zbar_pdf417),
    ]
    static func zbar(_ type: MetadataObjectType) -> Int32? { table.first { $0.0 == type }?.1 }
    static func type(zbar: Int32) -> MetadataObjectType? { table.first { $0.1 == zbar }?.0 }

    // zbar_config_t values, exported by the shim.
    static let configEnable = cvb_zbar_cfg_enable
    static let configBinary = cvb_zbar_cfg_binary
    static let configTestInverted = cvb_zbar_cfg_test_inverted
    static let configXDensity = cvb_zbar_cfg_x_density
    static let configYDensity = cvb_zbar_cfg_y_density
}

/// One symbol as ZBar or zxing-cpp reported it, in the pixels of the image it scanned.
struct ScannedSymbol: Sendable {
    var type: MetadataObjectType
    var bytes: [UInt8]
    /// The decoder's polygon; for 2-D codes the four corners clockwise from the symbol's top-left.
    var points: [CGPoint]
    var quality: Int
    var orientation: Int
    /// The ECI segments the symbol declares (zxing-cpp reports them; ZBar converts such
    /// payloads to UTF-8 itself): nil when none.
    var eci: [CodeText.ECISegment]? = nil
    /// zxing-cpp's own text for the symbol, when zxing-cpp read it and calls the content text.
    var decoderText: String? = nil
    /// Read on an unsharp-masked copy of the frame (`ScanRun.scanOtherTypes`), not the frame:
    /// the mask's overshoot moves bar edges, so a retail number read there is checked as a weak
    /// read is (`ScanRun.checkDoubtfulLinearReads`).
    var onSharpenedCopy = false

    /// The payload as text (`CodeText`), or nil when binary.
    var text: String? { CodeText.string(from: bytes, eci: eci, secondOpinion: decoderText) }

    /// Whether `other` reads the same code: same type, overlapping positions, and the same bytes
    /// or the same text (ZBar hands over an ECI-declared payload already converted to UTF-8,
    /// zxing-cpp the bytes as encoded). A code nested in another overlaps it but differs in both.
    func isSameCode(as other: ScannedSymbol) -> Bool {
        let box = DeviceSpace.boundingBox(of: points)
        // A linear code's polygon may be a single scan line, each decoder's a different one:
        // for those, near is within half the code's length.
        let margin = ZXingFormat.linearTypes.contains(type) || type == .dataBar ? max(4, max(box.width, box.height) / 2) : 4
        guard type == other.type,
            box.insetBy(dx: -margin, dy: -margin).intersects(DeviceSpace.boundingBox(of: other.points))
        else { return false }
        if bytes == other.bytes { return true }
        guard let text else { return false }
        return text == other.text
    }
}

/// A ZBar image scanner (`cvb_code_scanner`: `zbar_image_scanner_t`) configured for a set of
/// symbologies.
///
/// The scanner underneath is replaced by a new one, with the same configuration, after every
/// `renewalInterval` symbols read: ZBar's image scanner keeps about 200 bytes of every symbol it
/// decodes for as long as it lives, so a camera watching a code would grow by megabytes an hour
/// (figures in `Tools/Bench/README.md`).
///
/// Threading: not thread-safe; one thread at a time (ZBar's rule for a scanner).
final class ZBarScanner {
    private var handle: OpaquePointer
    /// Every configuration value set, the last per (symbology, config), in the order set: what a
    /// renewed scanner is given again.
    private var settings: [(symbology: Int32, config: Int32, value: Int32)] = []
    private var symbolsSinceRenewal = 0
    /// Symbols read before the scanner underneath is renewed.
    static let renewalInterval = 1000
    /// How many times the scanner underneath was renewed.
    private(set) var renewals = 0

    /// Creates a scanner with ZBar's defaults (`cvb_code_scanner_create`).
    init() throws(CaptureError) {
        var err = cvb_error()
        guard let h = cvb_code_scanner_create(&err) else {
            throw CaptureError(.outOfMemory, "cannot create a ZBar image scanner", bridge: err)
        }
        handle = h
    }

    deinit { cvb_code_scanner_destroy(handle) }

    /// Sets a ZBar configuration value (`zbar_image_scanner_set_config`); true when ZBar accepted it.
    @discardableResult
    func setConfig(symbology: Int32, config: Int32, value: Int32) -> Bool {
        settings.removeAll { $0.symbology == symbology && $0.config == config }
        settings.append((symbology, config, value))
        return cvb_code_scanner_set_config(handle, symbology, config, value) == 0
    }

    /// Replaces the scanner underneath with a new one given the same settings
    /// (`cvb_code_scanner_create`, then `zbar_image_scanner_set_config` for each). When ZBar
    /// cannot create one, the old scanner stays and the next scan tries again.
    private func renew() {
        var err = cvb_error()
        guard let fresh = cvb_code_scanner_create(&err) else { return }
        for s in settings { _ = cvb_code_scanner_set_config(fresh, s.symbology, s.config, s.value) }
        cvb_code_scanner_destroy(handle)
        handle = fresh
        symbolsSinceRenewal = 0
        renewals += 1
    }

    /// Reads a ZBar configuration value (`zbar_image_scanner_get_config`).
    func config(symbology: Int32, config: Int32) -> Int32? {
        var v: Int32 = 0
        return cvb_code_scanner_get_config(handle, symbology, config, &v) == 0 ? v : nil
    }

    /// Enables exactly `types` (every other symbology off) and asks for raw bytes from QR
    /// (ZBAR_CFG_BINARY: no character-set guessing inside ZBar; `CodeText` decides).
    func enable(_ types: Set<MetadataObjectType>, binary: Bool = true) {
        setConfig(symbology: 0, config: CodeSymbology.configEnable, value: 0)
        for t in types {
            if let z = CodeSymbology.zbar(t) { setConfig(symbology: z, config: CodeSymbology.configEnable, value: 1) }
        }
        setConfig(symbology: cvb_zbar_qrcode, config: CodeSymbology.configBinary, value: binary ? 1 : 0)
    }

    /// Scans every `step`-th row and column (`ZBAR_CFG_X_DENSITY`, `ZBAR_CFG_Y_DENSITY`; ZBar's
    /// default is 1, every line). Its cost follows the lines scanned; a code whose modules span
    /// at least `step` pixels is still crossed on every module row. True when ZBar accepted both.
    @discardableResult
    func setLineStep(_ step: Int32) -> Bool {
        setConfig(symbology: 0, config: CodeSymbology.configXDensity, value: step)
            && setConfig(symbology: 0, config: CodeSymbology.configYDensity, value: step)
    }

    /// Scans a gray image (`cvb_code_scanner_scan` → `zbar_scan_image`) and copies every symbol out.
    func scan(_ gray: PixelBuffer) throws(CaptureError) -> [ScannedSymbol] {
        var err = cvb_error()
        let n = gray.withBridgeImage { image in cvb_code_scanner_scan(handle, &image, &err) }
        guard n >= 0 else { throw CaptureError(.decodeFailed, "ZBar could not scan the image", bridge: err) }
        // The symbols are copied out below; the old scanner may go only after that.
        defer {
            symbolsSinceRenewal += Int(n)
            if symbolsSinceRenewal >= Self.renewalInterval { renew() }
        }
        var out: [ScannedSymbol] = []
        for i in 0..<n {
            var info = cvb_code_symbol()
            guard cvb_code_scanner_symbol(handle, i, &info, nil, 0, nil, nil, 0) == 0 else { continue }
            var bytes = [UInt8](repeating: 0, count: Int(info.data_length))
            var xs = [Int32](repeating: 0, count: Int(info.point_count))
            var ys = xs
            _ = bytes.withUnsafeMutableBufferPointer { b in
                xs.withUnsafeMutableBufferPointer { x in
                    ys.withUnsafeMutableBufferPointer { y in
                        cvb_code_scanner_symbol(
                            handle, i, &info, b.baseAddress, info.data_length, x.baseAddress, y.baseAddress,
                            info.point_count)
                    }
                }
            }
            guard let type = CodeSymbology.type(zbar: info.type) else { continue }
            var points = zip(xs, ys).map { CGPoint(x: Double($0), y: Double($1)) }
            if type == .qr && points.count == 4 {
                // ZBar lists QR corners top-left, bottom-left, bottom-right, top-right (in the
                // symbol's frame): counter-clockwise on screen. Reverse to clockwise from top-left.
                points = [points[0], points[3], points[2], points[1]]
            }
            out.append(
                ScannedSymbol(
                    type: type, bytes: bytes, points: points, quality: Int(info.quality),
                    orientation: Int(info.orientation)))
        }
        return out
    }
}
