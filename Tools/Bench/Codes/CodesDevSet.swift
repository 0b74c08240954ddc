@_spi(Benchmark) import CaptureKit
@_spi(Benchmark) import CaptureVision
import CaptureKitTesting
import Foundation

// The barcode dev set (shared/devsets/codes: manifest.tsv, images/, expected/; its README has
// the conventions): 385 ZXing and zxing-cpp test images, one expected code each, 13 symbologies.
// Read by path, never copied into the repository.
//
// Scoring, per image, for each reader's distinct outputs (the README's rules):
// - read: an output equals the expected payload (`.txt`: the text; `.bin`: the bytes, or the
//   text as ISO-8859-1), or carries it in another common form of the symbology (UPC-A as a
//   13-digit EAN-13, UPC-E as its UPC-A/EAN-13 expansion, DataBar with the AI 01, Codabar with
//   or without start/stop, full-ASCII Code 39 as raw pairs). "literal" counts the first kind only.
// - wrong payload: an output that is neither (a second code in the picture counts too).

struct CodesDevSetImage {
    var path: String
    var symbology: String
    var expectedText: String?
    var expectedBytes: [UInt8]
}

/// The images of `directory`/manifest.tsv; nil when it is absent.
func loadCodesDevSet(_ directory: String) -> [CodesDevSetImage]? {
    guard let data = FileManager.default.contents(atPath: directory + "/manifest.tsv") else { return nil }
    var out: [CodesDevSetImage] = []
    for line in String(decoding: data, as: UTF8.self).split(separator: "\n").dropFirst() {
        let f = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
        guard f.count >= 4, let bytes = FileManager.default.contents(atPath: directory + "/" + f[1]) else { continue }
        let isText = f[1].hasSuffix(".txt")
        out.append(
            CodesDevSetImage(
                path: directory + "/" + f[0], symbology: String(f[3].split(separator: "/").first ?? ""),
                expectedText: isText ? String(decoding: bytes, as: UTF8.self) : nil, expectedBytes: [UInt8](bytes)))
    }
    return out
}

/// The images of a folder laid out as zxing-cpp's test samples (`NAME.png`, `.jpg` or `.webp`
/// beside `NAME.txt`, or `NAME.bin` for bytes), all of `symbology`; nil when it cannot be read.
func loadCodesFolder(_ directory: String, symbology: String) -> [CodesDevSetImage]? {
    guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return nil }
    var out: [CodesDevSetImage] = []
    for name in names.sorted() where [".png", ".jpg", ".webp"].contains(where: { name.lowercased().hasSuffix($0) }) {
        let stem = directory + "/" + (name as NSString).deletingPathExtension
        if let text = FileManager.default.contents(atPath: stem + ".txt") {
            out.append(
                CodesDevSetImage(
                    path: directory + "/" + name, symbology: symbology, expectedText: String(decoding: text, as: UTF8.self),
                    expectedBytes: [UInt8](text)))
        } else if let bytes = FileManager.default.contents(atPath: stem + ".bin") {
            out.append(
                CodesDevSetImage(path: directory + "/" + name, symbology: symbology, expectedText: nil, expectedBytes: [UInt8](bytes)))
        }
    }
    return out
}

/// Second codes the dev set's README names in pictures whose ground truth is another code: a
/// read of one is a real code, counted apart from wrong payloads ("other code").
func isKnownSecondCode(_ path: String, _ text: String?) -> Bool {
    let name = URL(fileURLWithPath: path).lastPathComponent
    switch text {
    case "001EC947D49B": return name == "zx_code39-3_02.png"
    case "1920081045006": return name.hasPrefix("zx_ean13-2_")
    case "9074932437075": return name == "zx_upca-4_7.png"
    default: return false
    }
}

/// How an output compares with an image's expected payload.
enum CodesMatch { case literal, otherForm, none }

/// The GTIN check digit (mod 10, weights 3 and 1 from the right) of `digits`.
func gtinCheckDigit(_ digits: [Int]) -> Int {
    var sum = 0
    for (i, d) in digits.reversed().enumerated() { sum += d * (i % 2 == 0 ? 3 : 1) }
    return (10 - sum % 10) % 10
}

/// UPC-E (8 digits: number system, 6 data digits, check) expanded to UPC-A (12 digits).
func upcEToA(_ e: String) -> String? {
    let d = Array(e)
    guard d.count == 8, d.allSatisfy(\.isNumber) else { return nil }
    let m = String(d[1...6]), c = Array(m), last = c[5]
    let body: String
    switch last {
    case "0", "1", "2": body = String(c[0...1]) + String(last) + "0000" + String(c[2...4])
    case "3": body = String(c[0...2]) + "00000" + String(c[3...4])
    case "4": body = String(c[0...3]) + "00000" + String(c[4])
    default: body = String(c[0...4]) + "0000" + String(last)
    }
    return String(d[0]) + body + String(d[7])
}

/// The full-ASCII ("extended") reading of Code 39 data, or nil when a shift pair is invalid.
func code39Extended(_ s: String) -> String? {
    var out = ""
    var it = Array(s.unicodeScalars).makeIterator()
    while let c = it.next() {
        guard "$%/+".unicodeScalars.contains(c) else {
            out.unicodeScalars.append(c)
            continue
        }
        guard let n = it.next(), n.value >= 65, n.value <= 90 || (c == "%" && n.value <= 90) else { return nil }
        let v = n.value
        switch c {
        case "$": out.unicodeScalars.append(Unicode.Scalar(v - 64)!)
        case "+": out.unicodeScalars.append(Unicode.Scalar(v + 32)!)
        case "/":
            guard v <= 79 || v == 90 else { return nil }
            out.unicodeScalars.append(v == 90 ? ":" : Unicode.Scalar(v - 32)!)
        default:
            let table: [UInt32: UInt32] = [65: 27, 66: 28, 67: 29, 68: 30, 69: 31, 70: 59, 71: 60, 72: 61, 73: 62, 74: 63, 75: 91, 76: 92, 77: 93, 78: 94, 79: 95, 80: 123, 81: 124, 82: 125, 83: 126, 84: 127, 85: 0, 86: 64, 87: 96, 88: 127, 89: 127, 90: 127]
            guard let m = table[v] else { return nil }
            out.unicodeScalars.append(Unicode.Scalar(m)!)
        }
    }
    return out
}

/// Compares one output (bytes, text) with the image's expected payload.
func codesMatch(_ image: CodesDevSetImage, bytes: [UInt8], text: String?) -> CodesMatch {
    guard let want = image.expectedText else {
        if bytes == image.expectedBytes { return .literal }
        if let text, text.unicodeScalars.allSatisfy({ $0.value < 256 }),
            text.unicodeScalars.map({ UInt8($0.value) }) == image.expectedBytes
        {
            return .literal
        }
        return .none
    }
    let got = text ?? String(decoding: bytes, as: UTF8.self)
    if got == want { return .literal }
    switch image.symbology {
    case "upca":
        // zxing-cpp's sample folders (`--codes-folder`) write UPC-A in its 13-digit EAN-13 form.
        if got == "0" + want || (want.count == 13 && want.hasPrefix("0") && got == String(want.dropFirst())) {
            return .otherForm
        }
    case "upce":
        // The same folders write UPC-E as the EAN-13 form of its UPC-A expansion.
        if let a = upcEToA(want), got == a || got == "0" + a { return .otherForm }
        if let a = upcEToA(got), want == a || want == "0" + a { return .otherForm }
    case "ean13":
        // A UPC-A printed as such carries the EAN-13 number without its leading 0.
        if want.hasPrefix("0"), got == String(want.dropFirst()) { return .otherForm }
    case "databar":
        if got == "01" + want { return .otherForm }
    case "codabar":
        let stops = Set("ABCDTNE*".unicodeScalars)
        let strip = { (s: String) -> String in
            var u = Array(s.unicodeScalars)
            if let f = u.first, stops.contains(f) { u.removeFirst() }
            if let l = u.last, stops.contains(l) { u.removeLast() }
            return String(String.UnicodeScalarView(u))
        }
        if strip(got) == strip(want) { return .otherForm }
    case "code39":
        if code39Extended(got) == want { return .otherForm }
    default: break
    }
    return .none
}

/// One reader's tallies on the barcode dev set.
struct CodesDevSetScore {
    var read: [String: Int] = [:], literal: [String: Int] = [:], wrong: [String: Int] = [:], aborts: [String: Int] = [:]
    var other: [String: Int] = [:]
    var times: [Double] = []
    var missed: [String] = []
    var wrongList: [String] = []
}

let codesSymbologies = [
    "qr", "microqr", "aztec", "datamatrix", "pdf417", "ean13", "ean8", "upca", "upce", "code128", "code39", "code93", "itf", "codabar",
    "databar",
]

/// The barcode dev set at `directory` (nil: none) and the images of `folders` (symbology,
/// folder: `--codes-folder`), each reader beside the others.
@MainActor func runCodesDevSet(directory: String?, only: Set<String>?, folders: [(String, String)] = []) throws {
    var all: [CodesDevSetImage] = []
    if let directory {
        if let devset = loadCodesDevSet(directory) {
            all = devset
        } else {
            print("Barcode dev set: no manifest at \(directory) (pass --codes-devset DIR); skipped.")
            print("")
        }
    }
    for (symbology, folder) in folders {
        guard let images = loadCodesFolder(folder, symbology: symbology), !images.isEmpty else {
            print("--codes-folder \(symbology)=\(folder): no image with a .txt or .bin payload there; skipped.")
            print("")
            continue
        }
        all += images
    }
    guard !all.isEmpty else { return }
    let images = all.filter { only?.contains($0.symbology) ?? true }
    let types = Set(CodeDetector.availableMetadataObjectTypes)
    let detector = try CodeDetector(metadataObjectTypes: types, passes: cvcamPasses)
    typealias Output = (bytes: [UInt8], text: String?)
    var readers: [(name: String, read: (PixelBuffer, PixelBuffer) -> (outputs: [Output], ms: Double)?)] = [
        ("ZBar 0.23", { frame, _ in
            var out: [[UInt8]] = []
            let ms = milliseconds { out = zbar.payloads(frame) }
            return (out.map { ($0, String(validating: $0, as: UTF8.self)) }, ms)
        }),
        ("zxing-cpp 1.4", { _, gray in
            zxing14Child.read(gray, formats: "all").map { r in (r.codes.map { ($0.bytes, $0.text) }, r.ms) }
        }),
    ]
    if let z3 = zxing3 {
        readers.append(("zxing-cpp 3.x", { _, gray in
            z3.read(gray, formats: "all").map { r in (r.codes.map { ($0.bytes, $0.text) }, r.ms) }
        }))
    }
    readers.append(("cvcam", { frame, _ in
        var out: [CodeDetection] = []
        let ms = milliseconds { out = (try? detector.detections(in: frame)) ?? [] }
        return (out.map { ($0.payload, $0.stringValue) }, ms)
    }))
    var scores = [CodesDevSetScore](repeating: CodesDevSetScore(), count: readers.count)
    var counts: [String: Int] = [:]
    for image in images {
        counts[image.symbology, default: 0] += 1
        let frame = try QRTestCorpus.photo(at: image.path)
        let gray = try CodeImaging.gray(frame)
        let name = URL(fileURLWithPath: image.path).lastPathComponent
        for (k, reader) in readers.enumerated() {
            guard let (outputs, ms) = reader.read(frame, gray) else {
                scores[k].aborts[image.symbology, default: 0] += 1
                scores[k].missed.append("\(name) (aborted)")
                continue
            }
            scores[k].times.append(ms)
            var distinct: [Output] = []
            for o in outputs where !distinct.contains(where: { $0.bytes == o.bytes && $0.text == o.text }) { distinct.append(o) }
            let matches = distinct.map { codesMatch(image, bytes: $0.bytes, text: $0.text) }
            if matches.contains(.literal) { scores[k].literal[image.symbology, default: 0] += 1 }
            if matches.contains(where: { $0 != .none }) {
                scores[k].read[image.symbology, default: 0] += 1
            } else {
                scores[k].missed.append(name)
            }
            for (o, m) in zip(distinct, matches) where m == .none {
                if isKnownSecondCode(image.path, o.text) {
                    scores[k].other[image.symbology, default: 0] += 1
                    continue
                }
                scores[k].wrong[image.symbology, default: 0] += 1
                scores[k].wrongList.append("\(name): \((o.text ?? "<\(o.bytes.count) bytes>").prefix(40).debugDescription)")
            }
        }
    }
    let folderNote = folders.isEmpty ? "" : " (with " + folders.map { "\($0.1) as \($0.0)" }.joined(separator: ", ") + ")"
    print("## Barcode dev set: \(images.count) real images, one expected code each\(folderNote)")
    print("")
    print("Each reader with every format it has on (cvcam: every type it reads, `--types all`). A cell is codes read (in the canonical form or another common one), [the canonical form only], wrong payloads, and +N other: reads of a second code the README names in that picture (a real code outside the ground truth). ZBar has no Aztec, Data Matrix or PDF417 reader; zxing-cpp 1.4 runs in a child process because it aborts on some images.")
    print("")
    print("| symbology | codes | " + readers.map(\.name).joined(separator: " | ") + " |")
    print("|---|---:|" + readers.map { _ in "---|" }.joined())
    struct Total { var read = 0, literal = 0, wrong = 0, aborts = 0, other = 0 }
    func cell(_ t: Total) -> String {
        var s = "\(t.read) [\(t.literal)]"
        if t.wrong > 0 { s += ", \(t.wrong) wrong" }
        if t.other > 0 { s += ", +\(t.other) other" }
        if t.aborts > 0 { s += ", \(t.aborts) aborted" }
        return s
    }
    var totals = [Total](repeating: Total(), count: readers.count)
    for s in codesSymbologies where counts[s] != nil {
        var cells: [String] = []
        for (k, sc) in scores.enumerated() {
            let t = Total(
                read: sc.read[s] ?? 0, literal: sc.literal[s] ?? 0, wrong: sc.wrong[s] ?? 0, aborts: sc.aborts[s] ?? 0,
                other: sc.other[s] ?? 0)
            totals[k].read += t.read
            totals[k].literal += t.literal
            totals[k].wrong += t.wrong
            totals[k].aborts += t.aborts
            totals[k].other += t.other
            cells.append(cell(t))
        }
        print("| \(s) | \(counts[s]!) | " + cells.joined(separator: " | ") + " |")
    }
    print("| **all** | \(images.count) | " + totals.map { "**" + cell($0) + "**" }.joined(separator: " | ") + " |")
    print("| ms per image (median, p95) | | " + scores.map { "\(f(median($0.times))), \(f(percentile($0.times, 0.95)))" }.joined(separator: " | ") + " |")
    print("")
    if listMisses {
        for (k, reader) in readers.enumerated() {
            print("\(reader.name) misses: " + scores[k].missed.joined(separator: " "))
            print("")
            print("\(reader.name) wrong: " + scores[k].wrongList.joined(separator: "; "))
            print("")
        }
    }
}
