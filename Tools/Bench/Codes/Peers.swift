import CVBridge
@_spi(Benchmark) import CaptureKit
@_spi(Benchmark) import CaptureVision
import Foundation

// Peer readers that run in a child process, one image per request (the protocol of
// Tools/baseline/zxing3_peer.py): zxing-cpp 3.x from PyPI in a virtual environment, and plain
// zxing-cpp 1.4 with every format on, which can abort the process (a failed assertion in
// `Result::operator==`, mostly on DataBar): in a child, an abort costs that image, not the run.

/// One code a peer reported.
struct PeerCode {
    var format: String
    var bytes: [UInt8]
    var text: String?
}

/// A reader in a child process: "<width> <height> <formats>\n" and the gray pixels in, one JSON
/// line out ({"ms": CPU ms of the read, "codes": [...]}). A child that dies is restarted for the
/// next image; the image it died on counts as an abort.
final class ChildReader {
    let name: String
    let executable: String
    let arguments: [String]
    private var process: Process?
    private var input: FileHandle?
    private var output: FileHandle?
    private var buffer = Data()
    /// Images the child died on.
    private(set) var aborts = 0

    init(name: String, executable: String, arguments: [String]) {
        self.name = name
        self.executable = executable
        self.arguments = arguments
    }

    deinit { stop() }

    private func start() throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = arguments
        let inPipe = Pipe(), outPipe = Pipe()
        p.standardInput = inPipe
        p.standardOutput = outPipe
        p.standardError = FileHandle.nullDevice
        try p.run()
        process = p
        input = inPipe.fileHandleForWriting
        output = outPipe.fileHandleForReading
        buffer = Data()
    }

    func stop() {
        try? input?.close()
        process?.waitUntilExit()
        process = nil
        input = nil
        output = nil
    }

    private func readLine() -> Data? {
        while true {
            if let nl = buffer.firstIndex(of: 0x0A) {
                let line = buffer[buffer.startIndex..<nl]
                buffer = Data(buffer[(nl + 1)...])
                return Data(line)
            }
            guard let output else { return nil }
            let chunk = output.availableData
            if chunk.isEmpty { return nil }
            buffer.append(chunk)
        }
    }

    /// The child's first answer line to `request` (no pixels), e.g. "version".
    func ask(_ request: String) -> [String: Any]? {
        if process == nil { try? start() }
        guard let input else { return nil }
        do { try input.write(contentsOf: Data((request + "\n").utf8)) } catch { return nil }
        return readLine().flatMap { try? JSONSerialization.jsonObject(with: $0) as? [String: Any] }
    }

    /// Reads `gray` (an 8-bit gray buffer); nil when the child died on it.
    func read(_ gray: PixelBuffer, formats: String) -> (codes: [PeerCode], ms: Double)? {
        if process == nil {
            do { try start() } catch { return nil }
        }
        var request = Data("\(gray.width) \(gray.height) \(formats)\n".utf8)
        let base = gray.baseAddress.assumingMemoryBound(to: UInt8.self)
        for y in 0..<gray.height {
            request.append(UnsafeBufferPointer(start: base + y * gray.bytesPerRow, count: gray.width))
        }
        guard let input, (try? input.write(contentsOf: request)) != nil, let line = readLine(),
            let json = try? JSONSerialization.jsonObject(with: line) as? [String: Any]
        else {
            aborts += 1
            stop()
            return nil
        }
        let codes = (json["codes"] as? [[String: Any]] ?? []).map { c in
            PeerCode(
                format: c["format"] as? String ?? "?",
                bytes: (c["bytes"] as? String).flatMap { Data(base64Encoded: $0) }.map { [UInt8]($0) } ?? [],
                text: c["text"] as? String)
        }
        return (codes, json["ms"] as? Double ?? .nan)
    }
}

/// zxing-cpp 1.4's format bits (BarcodeFormat.h), by the names zxing-cpp 3.x uses too.
let zxing14Formats: [(String, UInt32)] = [
    ("Aztec", 1 << 0), ("Codabar", 1 << 1), ("Code39", 1 << 2), ("Code93", 1 << 3), ("Code128", 1 << 4),
    ("DataBar", 1 << 5), ("DataBarExpanded", 1 << 6), ("DataMatrix", 1 << 7), ("EAN8", 1 << 8), ("EAN13", 1 << 9),
    ("ITF", 1 << 10), ("MaxiCode", 1 << 11), ("PDF417", 1 << 12), ("QRCode", 1 << 13), ("UPCA", 1 << 14),
    ("UPCE", 1 << 15), ("MicroQRCode", 1 << 16),
]

/// `bench-codes --zxing14-worker`: plain zxing-cpp 1.4 (`ZXing::ReadBarcodes` through the shim,
/// the library's default hints) answering ChildReader requests until standard input ends.
func runZXing14Worker() -> Never {
    var err = cvb_error()
    let reader = cvb_zxing_reader_create(&err)!
    let stdin = FileHandle.standardInput
    var buffer = Data()
    func fill(_ n: Int) -> Bool {
        while buffer.count < n {
            let chunk = stdin.availableData
            if chunk.isEmpty { return false }
            buffer.append(chunk)
        }
        return true
    }
    while true {
        var line: Data?
        while line == nil {
            if let nl = buffer.firstIndex(of: 0x0A) {
                line = Data(buffer[buffer.startIndex..<nl])
                buffer = Data(buffer[(nl + 1)...])
            } else if !fill(buffer.count + 1) {
                exit(0)
            }
        }
        let parts = String(decoding: line!, as: UTF8.self).split(separator: " ").map(String.init)
        guard parts.count == 3, let w = Int(parts[0]), let h = Int(parts[1]), fill(w * h) else { exit(0) }
        let pixels = [UInt8](buffer.prefix(w * h))
        buffer = Data(buffer.dropFirst(w * h))
        var mask: UInt32 = 0
        if parts[2] != "all" {
            for name in parts[2].split(separator: ",") { mask |= zxing14Formats.first { $0.0 == name }?.1 ?? 0 }
        }
        var hints = cvb_zxing_default_hints()
        hints.formats = mask
        var codes: [[String: Any]] = []
        var n: Int32 = 0
        let ms = pixels.withUnsafeBufferPointer { p -> Double in
            var image = cvb_image(
                data: UnsafeMutablePointer(mutating: p.baseAddress!), width: Int32(w), height: Int32(h), stride: Int32(w),
                format: PixelFormat.gray.rawValue)
            return milliseconds { n = cvb_zxing_read(reader, &image, &hints, &err) }
        }
        for i in 0..<max(n, 0) {
            var info = cvb_zxing_result()
            _ = cvb_zxing_result_get(reader, i, &info, nil, 0, nil, 0, nil, 0)
            var bytes = [UInt8](repeating: 0, count: Int(info.bytes_length))
            var text = [CChar](repeating: 0, count: Int(info.text_length) + 1)
            _ = cvb_zxing_result_get(reader, i, &info, &bytes, info.bytes_length, nil, 0, &text, info.text_length)
            codes.append([
                "format": zxing14Formats.first { $0.1 == info.format }?.0 ?? "?",
                "bytes": Data(bytes).base64EncodedString(),
                "text": String(decoding: text.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self),
            ])
        }
        let answer = try! JSONSerialization.data(withJSONObject: ["ms": ms, "codes": codes])
        FileHandle.standardOutput.write(answer + Data([0x0A]))
    }
}

/// The zxing-cpp 3.x peer, when `--zxing3 PYTHON` named an interpreter that has the package.
@MainActor var zxing3: ChildReader?
/// Plain zxing-cpp 1.4 in a child process (this executable, `--zxing14-worker`).
@MainActor let zxing14Child = ChildReader(
    name: "zxing-cpp 1.4", executable: CommandLine.arguments[0], arguments: ["--zxing14-worker"])
