@_spi(Benchmark) import CaptureKit
@_spi(Benchmark) import CaptureVision
import CaptureKitTesting
import Foundation

// The real-photo QR dev set (shared/devsets/qr: manifest.json, images/, negatives/; its README
// has the schema). Read by path, never copied into the repository.
//
// Scoring, per positive image, for each reader's distinct outputs (bytes, text):
// - a code is read exactly when an output's bytes equal the code's bytes (`bytes_b64`, else the
//   UTF-8 of `text`) and its text equals `text` (nil for a binary code). Plain ZBar hands over
//   text, not bytes: its bytes count as right when they, or its text as ISO-8859-1, equal the
//   code's bytes (the README's rule for ZBar);
// - a wrong text is an output whose bytes are a code's but whose text is not;
// - a wrong payload is any other output matching no code (an output on a negative image is a
//   false decode).
// Times: CPU milliseconds per image, gray conversion included, median and 95th percentile.

struct DevSetCode {
    var bytes: [UInt8]
    var text: String?
}

struct DevSetImage {
    var path: String
    var category: String
    var negative: Bool
    var codes: [DevSetCode]
}

/// The images of `directory`/manifest.json; nil when it is absent.
func loadDevSet(_ directory: String) -> [DevSetImage]? {
    guard let data = FileManager.default.contents(atPath: directory + "/manifest.json"),
        let entries = try? JSONSerialization.jsonObject(with: data) as? [[String: Any]]
    else { return nil }
    return entries.map { e in
        let codes = (e["codes"] as? [[String: Any]] ?? []).map { c -> DevSetCode in
            let text = c["text"] as? String
            let bytes = (c["bytes_b64"] as? String).flatMap { Data(base64Encoded: $0) }.map { [UInt8]($0) }
            return DevSetCode(bytes: bytes ?? Array((text ?? "").utf8), text: text)
        }
        return DevSetImage(
            path: directory + "/" + (e["image"] as? String ?? ""), category: e["category"] as? String ?? "photo",
            negative: e["negative"] as? Bool ?? false, codes: codes)
    }
}

/// One reader's tallies, overall and per category.
struct DevSetScore {
    var exact = 0, wrongTexts = 0, wrongPayloads = 0, falseDecodes = 0, negativesWithDecode = 0
    var times: [Double] = []
    var byCategory: [String: (exact: Int, codes: Int, wrong: Int)] = [:]
    /// "image: text" of each code not read exactly.
    var missed: [String] = []
}

func percentile(_ xs: [Double], _ p: Double) -> Double {
    let s = xs.sorted()
    return s.isEmpty ? .nan : s[min(s.count - 1, Int((Double(s.count - 1) * p).rounded()))]
}

@MainActor func runDevSet(directory: String) throws {
    guard let images = loadDevSet(directory) else {
        print("Dev set: no manifest at \(directory) (pass --devset DIR); skipped.")
        print("")
        return
    }
    let cvcamDetector = try CodeDetector(metadataObjectTypes: [.qr, .microQR], passes: cvcamPasses)
    typealias Output = (bytes: [UInt8], text: String?)
    var readers: [(name: String, bytesAreText: Bool, read: (PixelBuffer) -> [Output])] = [
        ("plain ZBar", true, { frame in zbar.payloads(frame).map { ($0, String(validating: $0, as: UTF8.self)) } }),
        ("plain zxing-cpp 1.4", false, { frame in zxing.read(frame) }),
    ]
    // zxing-cpp 3.x times itself (CPU time of the read in its process); the others are timed here.
    var peerTimes: [Double] = []
    if let z3 = zxing3 {
        readers.append(("zxing-cpp 3.x", false, { frame in
            guard let gray = try? CodeImaging.gray(frame), let r = z3.read(gray, formats: "QRCode,MicroQRCode") else { return [] }
            peerTimes.append(r.ms)
            return r.codes.map { ($0.bytes, $0.text) }
        }))
    }
    readers.append(("cvcam", false, { frame in ((try? cvcamDetector.detect(in: frame)) ?? []).map { ($0.payload, $0.stringValue) } }))
    var scores = [DevSetScore](repeating: DevSetScore(), count: readers.count)
    var categories: [String] = []
    for image in images {
        let frame = try QRTestCorpus.photo(at: image.path)
        if !image.negative && !categories.contains(image.category) { categories.append(image.category) }
        for (k, reader) in readers.enumerated() {
            var outputs: [Output] = []
            let t = milliseconds { outputs = reader.read(frame) }
            scores[k].times.append(reader.name == "zxing-cpp 3.x" ? peerTimes.last ?? .nan : t)
            var distinct: [Output] = []
            for o in outputs where !distinct.contains(where: { $0.bytes == o.bytes && $0.text == o.text }) { distinct.append(o) }
            if image.negative {
                scores[k].falseDecodes += distinct.count
                scores[k].negativesWithDecode += distinct.isEmpty ? 0 : 1
                continue
            }
            func bytesMatch(_ o: Output, _ c: DevSetCode) -> Bool {
                if o.bytes == c.bytes { return true }
                guard reader.bytesAreText, let t = o.text else { return false }
                return t.unicodeScalars.allSatisfy { $0.value < 256 } && t.unicodeScalars.map { UInt8($0.value) } == c.bytes
            }
            func exact(_ o: Output, _ c: DevSetCode) -> Bool {
                // Plain ZBar's bytes are its text: a text code is exact when the text is.
                if reader.bytesAreText, let t = c.text { return o.text == t }
                return bytesMatch(o, c) && o.text == c.text
            }
            var cat = scores[k].byCategory[image.category, default: (0, 0, 0)]
            for c in image.codes {
                cat.codes += 1
                if distinct.contains(where: { exact($0, c) }) {
                    scores[k].exact += 1
                    cat.exact += 1
                } else {
                    scores[k].missed.append("\(URL(fileURLWithPath: image.path).lastPathComponent): \((c.text ?? "<binary>").prefix(40))")
                }
            }
            for o in distinct where !image.codes.contains(where: { exact(o, $0) }) {
                cat.wrong += 1
                if image.codes.contains(where: { bytesMatch(o, $0) }) {
                    scores[k].wrongTexts += 1
                } else {
                    scores[k].wrongPayloads += 1
                }
            }
            scores[k].byCategory[image.category] = cat
        }
    }
    let positives = images.filter { !$0.negative }
    let codes = positives.reduce(0) { $0 + $1.codes.count }
    let negatives = images.count - positives.count
    print("## Dev set: \(positives.count) real photos/screens with \(codes) codes, \(negatives) code-free images")
    print("")
    print("cvcam looks for QR and Micro QR; plain zxing-cpp 1.4 and 3.x read QR and Micro QR with their default hints; plain ZBar runs its default configuration (its own text conversion).")
    print("")
    print("| reader | codes exact (bytes and text) | wrong texts | wrong payloads | false decodes (negatives with one) | ms median | ms p95 |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for (k, reader) in readers.enumerated() {
        let s = scores[k]
        print("| \(reader.name) | \(s.exact)/\(codes) (\(percent(s.exact, codes))) | \(s.wrongTexts) | \(s.wrongPayloads) | \(s.falseDecodes) (\(s.negativesWithDecode)/\(negatives)) | \(f(median(s.times))) | \(f(percentile(s.times, 0.95))) |")
    }
    print("")
    print("| category | codes | " + readers.map(\.name).joined(separator: " | ") + " |")
    print("|---|---:|" + readers.map { _ in "---:" }.joined(separator: "|") + "|")
    for category in categories {
        let n = scores[0].byCategory[category]?.codes ?? 0
        let cells = scores.map { s -> String in
            let c = s.byCategory[category] ?? (0, 0, 0)
            return "\(c.exact)/\(n)" + (c.wrong > 0 ? " (\(c.wrong) wrong)" : "")
        }
        print("| \(category) | \(n) | " + cells.joined(separator: " | ") + " |")
    }
    print("")
    if listMisses {
        for (k, reader) in readers.enumerated() {
            print("\(reader.name) misses: " + scores[k].missed.joined(separator: "; "))
        }
        print("")
    }
}
