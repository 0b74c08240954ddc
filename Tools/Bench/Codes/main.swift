// bench-codes: cvcam's CodeDetector versus plain ZBar (default configuration, one scan of the
// gray frame) and plain zxing-cpp (library defaults, QR and Micro QR, one read of the gray
// frame), measured in the same run on the same frames. Prints Markdown.
//
//   Tools/bench-codes [--samples N] [--seed S] [--ablation] [--no-finder-gate] [--no-zxing-gate] [--gate-offset LEVELS|none] [--gate-row-step N] [--finder-offset LEVELS] [--full-finder-offset LEVELS] [--no-loose-small-finders] [--area-module PX] [--finders]
//   Tools/bench-codes --devset-only [--devset DIR]
//
// The real-photo QR dev set (DIR, default ../shared/devsets/qr beside the package; skipped with
// a message when absent) is scored first: see `DevSet.swift`. --devset-only stops after it;
// --no-devset skips it; --misses lists each reader's codes not read exactly.
//   Tools/bench-codes --samples 6 --profile [--only plain,nonUTF8]
//   Tools/bench-codes --small-turned: QR codes of 2-px modules turned 3-30 degrees (versions 2-10, 48 frames), cvcam beside zxing-cpp 3.x
//   Tools/bench-codes --framed-faint: faint QR codes in a bright surround (60 frames), cvcam beside zxing-cpp 3.x
//
// --no-zxing-gate lets zxing-cpp read every frame, not only where FinderEvidence sees a finder
// (`Passes.zxingFinderGate`); --zxing-first lets zxing-cpp read a gated frame before ZBar's
// scans around its finders (`Passes.zbarAroundFindersFirst` off); --gate-offset sets the threshold offset of the gate's last
// full-size look (`Passes.zxingGateFullSizeOffset`, none: no such look) and --gate-row-step its row step (`Passes.zxingGateRowStep`); --no-finder-gate runs cvcam as it was before the finder gate (every rescue pass on any
// detailed frame); --finder-offset and --full-finder-offset set FinderEvidence's threshold
// offset at half/quarter size (default 6) and at full size (default 0; before, 0 everywhere);
// --no-loose-small-finders turns off the full-size row test's looser match for small finders;
// --area-module sets the module size finder areas are scaled to before ZBar (default 2; 0: none);
// --finders lists finder candidates per frame; --profile runs only cvcam on the
// 640x480 frames with codes (or --only those categories), over and over for 20 s, for a
// profiler, then prints per category the median time and the passes one detection ran
// (development aids); --profile-code-free does the same on the 640x480 code-free frames (noise,
// clutter, fixture photos) for 15 s and prints their median. --only CATEGORIES (without
// --profile) limits the generated corpus's table to those categories; --save-misses DIR writes
// each generated frame cvcam did not read every code of as DIR/NAME.png (for --read qr PATH) and
// prints a line per missed code; with --other-types, each symbol frame cvcam (gated) did not
// read, and whether a cue opened its read (development aids).
//
// Decode rate counts a code as read only when the exact payload bytes come back. False decodes
// are any symbol reported on a code-free frame (the face fixture photos and negatives, plus
// generated clutter). Times are the median CPU milliseconds per frame (thread CPU clock), gray
// conversion included for both.
import CVBridge
@_spi(Benchmark) import CaptureKit
@_spi(Benchmark) import CaptureVision
import CaptureKitTesting
import Foundation

var samplesPerCategory = 40
var seed: UInt64 = 2026
var ablation = false
var finderGate = true
var zxingGate = true
var zbarFirst = true
var gateOffset: Double?? = .none
var gateRowStep: Int?
var finderOffset: Double?
var fullFinderOffset: Double?
var looseSmallFinders = true
var areaModule: Double?
var perspective = true
var codeLevel = true
var smallImageReads = true
var linearReadCheck = true
var sharpenedReadCheck = true
var retailFragmentCheck = true
var stripRead = true
var doubledLinearRead = true
var unconfirmedConflictDropped = true
var aztecSoftScales = true
var flatRange: Int32? = CodeDetector.Passes().flatBlockRange
var measuredOutlines = true
var alignmentRefit = true
var gateLookTriples = true
var aztecData = true
var inkSpread = true
var devsetPath: String?
var devsetOnly = false
var noDevset = false
var listMisses = false
var zxing3Python: String?
var codesDevsetPath: String?
var noCodesDevset = false
var codesOnly: Set<String>?
var codesFolders: [(String, String)] = []
var saveMissesPath: String?
var onlyCategories: Set<String>?
if CommandLine.arguments.dropFirst().first == "--zxing14-worker" { runZXing14Worker() }
// --read TYPES PATH...: what cvcam reads in each image (type, quality, payload), a development aid;
// --read-ungated the same with `Passes.typeGate` off.
if ["--read", "--read-ungated"].contains(CommandLine.arguments.dropFirst().first) {
    let names = CommandLine.arguments[2]
    let types = names == "all" ? CodeDetector.availableMetadataObjectTypes
        : Set(names.split(separator: ",").map { MetadataObjectType(rawValue: String($0)) })
    var passes = CodeDetector.Passes()
    passes.typeGate = CommandLine.arguments[1] == "--read"
    let d = try CodeDetector(metadataObjectTypes: types, passes: passes)
    for path in CommandLine.arguments.dropFirst(3) {
        let frame = try QRTestCorpus.photo(at: path)
        var codes: [CodeDetection] = []
        let ms = milliseconds { codes = (try? d.detections(in: frame)) ?? [] }
        print("\(URL(fileURLWithPath: path).lastPathComponent) (\(f(ms)) ms):")
        for c in codes { print("  \(c.type) q\(c.quality) \((c.stringValue ?? "<\(c.payload.count) bytes>").prefix(60).debugDescription)") }
    }
    exit(0)
}
var arguments = CommandLine.arguments.dropFirst().makeIterator()
var rescueFolders = false  // the arguments after --rescue-costs that are not options are its folders
while let a = arguments.next() {
    switch a {
    case _ where rescueFolders && !a.hasPrefix("--"): continue
    case "--samples": samplesPerCategory = Int(arguments.next() ?? "") ?? samplesPerCategory
    case "--seed": seed = UInt64(arguments.next() ?? "") ?? seed
    case "--ablation": ablation = true
    case "--explore", "--finders", "--profile", "--profile-code-free", "--type-costs", "--other-types", "--small-turned", "--framed-faint": break
    case "--only": onlyCategories = Set((arguments.next() ?? "").split(separator: ",").map(String.init))
    case "--profile-types": _ = arguments.next()
    case "--save-misses": saveMissesPath = arguments.next()
    case "--no-finder-gate": finderGate = false
    case "--no-zxing-gate": zxingGate = false
    case "--zxing-first": zbarFirst = false
    case "--gate-offset": gateOffset = Double(arguments.next() ?? "")
    case "--gate-row-step": gateRowStep = Int(arguments.next() ?? "")
    case "--finder-offset": finderOffset = Double(arguments.next() ?? "")
    case "--full-finder-offset": fullFinderOffset = Double(arguments.next() ?? "")
    case "--no-loose-small-finders": looseSmallFinders = false
    case "--area-module": areaModule = Double(arguments.next() ?? "")
    case "--no-perspective": perspective = false
    case "--no-code-level": codeLevel = false
    case "--no-small-large-reads": smallImageReads = false
    case "--no-linear-read-check": linearReadCheck = false
    case "--no-sharpened-read-check": sharpenedReadCheck = false
    case "--no-retail-fragment-check": retailFragmentCheck = false
    case "--no-strip-read": stripRead = false
    case "--no-doubled-linear-read": doubledLinearRead = false
    case "--keep-unconfirmed-conflicts": unconfirmedConflictDropped = false
    case "--no-aztec-soft-scales": aztecSoftScales = false
    case "--flat-range":
        let v = arguments.next() ?? ""
        flatRange = v == "none" ? nil : Int32(v) ?? flatRange
    case "--no-measured-outlines": measuredOutlines = false
    case "--no-alignment-refit": alignmentRefit = false
    case "--no-gate-look-triples": gateLookTriples = false
    case "--no-aztec-data": aztecData = false
    case "--no-ink-spread": inkSpread = false
    case "--rescue-costs": rescueFolders = true
    case "--devset": devsetPath = arguments.next()
    case "--devset-only": devsetOnly = true
    case "--no-devset": noDevset = true
    case "--misses": listMisses = true
    case "--zxing3": zxing3Python = arguments.next()
    case "--codes-devset": codesDevsetPath = arguments.next()
    case "--no-codes-devset": noCodesDevset = true
    case "--codes-folder":
        // SYMBOLOGY=DIR: images laid out as zxing-cpp's test samples, read beside the dev set.
        let spec = arguments.next() ?? ""
        guard let eq = spec.firstIndex(of: "="), eq != spec.startIndex else {
            FileHandle.standardError.write("bench-codes: --codes-folder takes SYMBOLOGY=DIR (e.g. microqr=DIR)\n".data(using: .utf8)!)
            exit(64)
        }
        codesFolders.append((String(spec[..<eq]), String(spec[spec.index(after: eq)...])))
    case "--codes-only": codesOnly = Set((arguments.next() ?? "").split(separator: ",").map(String.init))
    default:
        FileHandle.standardError.write("usage: bench-codes [--samples N] [--seed S] [--ablation] [--no-finder-gate] [--no-zxing-gate] [--gate-offset LEVELS|none] [--gate-row-step N] [--finder-offset LEVELS] [--full-finder-offset LEVELS] [--no-loose-small-finders] [--area-module PX] [--no-perspective] [--no-code-level] [--no-small-large-reads] [--no-linear-read-check] [--no-sharpened-read-check] [--no-retail-fragment-check] [--no-strip-read] [--no-doubled-linear-read] [--keep-unconfirmed-conflicts] [--no-aztec-soft-scales] [--flat-range LEVELS|none] [--no-measured-outlines] [--no-alignment-refit] [--no-gate-look-triples] [--no-aztec-data] [--no-ink-spread] [--rescue-costs DIR...] [--finders] [--profile [--only CATEGORIES]] [--profile-code-free] [--devset DIR] [--devset-only] [--no-devset] [--misses] [--zxing3 PYTHON] [--codes-devset DIR] [--no-codes-devset] [--codes-folder SYMBOLOGY=DIR] [--codes-only SYMBOLOGIES] [--only CATEGORIES] [--save-misses DIR] [--small-turned] [--framed-faint]\n".data(using: .utf8)!)
        exit(64)
    }
}

/// Plain ZBar as a user would call it: default configuration, one `zbar_scan_image` of the gray frame.
final class PlainZBar {
    let scanner: OpaquePointer
    init() {
        var err = cvb_error()
        scanner = cvb_code_scanner_create(&err)!
    }
    deinit { cvb_code_scanner_destroy(scanner) }

    func payloads(_ frame: PixelBuffer) -> [[UInt8]] {
        let gray = try! PixelBuffer(width: frame.width, height: frame.height, pixelFormat: .gray)
        var src = view(frame)
        var dst = view(gray)
        var err = cvb_error()
        _ = cvb_image_convert(&src, &dst, &err)
        let n = cvb_code_scanner_scan(scanner, &dst, &err)
        var out: [[UInt8]] = []
        for i in 0..<max(n, 0) {
            var info = cvb_code_symbol()
            _ = cvb_code_scanner_symbol(scanner, i, &info, nil, 0, nil, nil, 0)
            var bytes = [UInt8](repeating: 0, count: Int(info.data_length))
            _ = cvb_code_scanner_symbol(scanner, i, &info, &bytes, info.data_length, nil, nil, 0)
            out.append(bytes)
        }
        return out
    }
}

/// A C view of `b`'s pixels for the shim.
func view(_ b: PixelBuffer) -> cvb_image {
    cvb_image(
        data: b.baseAddress.assumingMemoryBound(to: UInt8.self), width: Int32(b.width), height: Int32(b.height),
        stride: Int32(b.bytesPerRow), format: b.pixelFormat.rawValue)
}

/// Plain zxing-cpp as a user would call it: `ZXing::ReadBarcodes` with the library's default
/// hints, QR and Micro QR, on the gray frame (zxing-cpp 1.4 has no inversion of its own).
final class PlainZXing {
    let reader: OpaquePointer
    init() {
        var err = cvb_error()
        reader = cvb_zxing_reader_create(&err)!
    }
    deinit { cvb_zxing_reader_destroy(reader) }

    /// Each result's raw bytes (`bytes()`) and text (`text()`, zxing-cpp's character-set choice).
    func read(_ frame: PixelBuffer) -> [(bytes: [UInt8], text: String?)] {
        let gray = try! PixelBuffer(width: frame.width, height: frame.height, pixelFormat: .gray)
        var src = view(frame)
        var dst = view(gray)
        var err = cvb_error()
        _ = cvb_image_convert(&src, &dst, &err)
        var hints = cvb_zxing_default_hints()
        hints.formats = (1 << 13) | (1 << 16)  // QRCode, MicroQRCode
        let n = cvb_zxing_read(reader, &dst, &hints, &err)
        var out: [(bytes: [UInt8], text: String?)] = []
        for i in 0..<max(n, 0) {
            var info = cvb_zxing_result()
            _ = cvb_zxing_result_get(reader, i, &info, nil, 0, nil, 0, nil, 0)
            var bytes = [UInt8](repeating: 0, count: Int(info.bytes_length))
            var text = [CChar](repeating: 0, count: Int(info.text_length) + 1)
            _ = cvb_zxing_result_get(reader, i, &info, &bytes, info.bytes_length, nil, 0, &text, info.text_length)
            out.append((bytes, String(validating: text.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)))
        }
        return out
    }

    func payloads(_ frame: PixelBuffer) -> [[UInt8]] { read(frame).map(\.bytes) }
}

/// CPU time of the calling thread spent in `body` (`clock_gettime(CLOCK_THREAD_CPUTIME_ID)`), in
/// milliseconds: robust on a shared machine, where wall time mostly measures the neighbours.
func milliseconds(_ body: () -> Void) -> Double {
    var a = timespec(), b = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a)
    body()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b)
    return Double(b.tv_sec - a.tv_sec) * 1e3 + Double(b.tv_nsec - a.tv_nsec) / 1e6
}

func median(_ xs: [Double]) -> Double {
    let s = xs.sorted()
    return s.isEmpty ? .nan : (s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2)
}

func f(_ x: Double, _ digits: Int = 2) -> String { String(format: "%.\(digits)f", x) }
func percent(_ a: Int, _ b: Int) -> String { b == 0 ? "–" : String(format: "%.1f%%", 100 * Double(a) / Double(b)) }

/// Counts expected payloads found (each expected code matched at most once).
func hits(_ expected: [[UInt8]], _ found: [[UInt8]]) -> Int {
    var pool = found
    var n = 0
    for e in expected {
        if let i = pool.firstIndex(of: e) {
            pool.remove(at: i)
            n += 1
        }
    }
    return n
}

let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()
let fixtureDirs = ["Tests/Fixtures/faces/images", "Tests/Fixtures/faces/negatives"]
let photoPaths = fixtureDirs.flatMap { dir -> [String] in
    let path = root.appendingPathComponent(dir).path
    return ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted().map { path + "/" + $0 }
}

let zbar = PlainZBar()
let zxing = PlainZXing()
var cvcamPasses = CodeDetector.Passes()
cvcamPasses.finderGate = finderGate
cvcamPasses.zxingFinderGate = zxingGate
cvcamPasses.zbarAroundFindersFirst = zbarFirst
if let gateOffset { cvcamPasses.zxingGateFullSizeOffset = gateOffset }
if let gateRowStep { cvcamPasses.zxingGateRowStep = gateRowStep }
if let finderOffset { cvcamPasses.finderThresholdOffset = finderOffset }
if let fullFinderOffset { cvcamPasses.fullSizeFinderThresholdOffset = fullFinderOffset }
cvcamPasses.looseSmallFinders = looseSmallFinders
if let areaModule { cvcamPasses.areaModuleSize = areaModule }
cvcamPasses.perspective = perspective
cvcamPasses.codeLevel = codeLevel
cvcamPasses.doubledSmallRead = smallImageReads
cvcamPasses.largeModuleRead = smallImageReads
cvcamPasses.linearReadCheck = linearReadCheck
cvcamPasses.sharpenedReadCheck = sharpenedReadCheck
cvcamPasses.retailFragmentCheck = retailFragmentCheck
cvcamPasses.stripRead = stripRead
cvcamPasses.doubledLinearRead = doubledLinearRead
cvcamPasses.unconfirmedConflictDropped = unconfirmedConflictDropped
cvcamPasses.aztecSoftScales = aztecSoftScales
cvcamPasses.flatBlockRange = flatRange
cvcamPasses.measuredOutlines = measuredOutlines
cvcamPasses.alignmentRefit = alignmentRefit
cvcamPasses.gateLookTriples = gateLookTriples
cvcamPasses.aztecData = aztecData
cvcamPasses.inkSpread = inkSpread
let cvcam = try CodeDetector(passes: cvcamPasses)

print("# bench-codes: cvcam CodeDetector vs plain ZBar, plain zxing-cpp 1.4 and zxing-cpp 3.x")
print("")
if let python = zxing3Python {
    let peer = ChildReader(
        name: "zxing-cpp 3.x", executable: python, arguments: [root.appendingPathComponent("Tools/baseline/zxing3_peer.py").path])
    if let version = peer.ask("version")?["version"] as? String {
        print("zxing-cpp \(version) (PyPI, `read_barcodes` with its defaults, TextMode.Plain) measured in a child process; its times are its own CPU time around the read.")
        zxing3 = peer
    } else {
        print("zxing-cpp 3.x: \(python) could not start Tools/baseline/zxing3_peer.py; left out.")
    }
} else {
    print("zxing-cpp 3.x: not measured (Tools/bench-codes installs it; or pass --zxing3 PYTHON).")
}
print("")
if CommandLine.arguments.contains("--framed-faint") {
    try runFramedFaint()
    exit(0)
}
if CommandLine.arguments.contains("--small-turned") {
    try runSmallTurned()
    exit(0)
}
if !noCodesDevset || !codesFolders.isEmpty {
    let dir = codesDevsetPath ?? root.deletingLastPathComponent().appendingPathComponent("shared/devsets/codes").path
    try runCodesDevSet(directory: noCodesDevset ? nil : dir, only: codesOnly, folders: codesFolders)
}
if codesOnly != nil { exit(0) }
if !noDevset {
    let dir = devsetPath ?? root.deletingLastPathComponent().appendingPathComponent("shared/devsets/qr").path
    try runDevSet(directory: dir)
}

if devsetOnly { exit(0) }

print("Code types available here (ZBar, zxing-cpp): \(CodeDetector.availableMetadataObjectTypes.map(\.rawValue).sorted().joined(separator: ", ")). Plain ZBar runs its default configuration (all symbologies, text conversion); plain zxing-cpp its default hints for QR and Micro QR; cvcam looks for QR only, raw bytes.")
print("")
print("\(samplesPerCategory) generated frames per category (seed \(seed)); a code counts only when its exact bytes come back.")
print("")

if CommandLine.arguments.contains("--explore") {
    explore()
    exit(0)
}

/// --save-misses DIR: a generated frame cvcam did not read every code of, written as DIR/NAME.png
/// (a development aid for `--read qr DIR/NAME.png`), and a line per missed code: its version,
/// module size, corners, and whether zxing-cpp 3.x read it in the same run.
func saveMiss(_ s: QRTestCorpus.Sample, read: [[UInt8]], peer: [[UInt8]], to dir: String) throws {
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    try ImageFile.write(s.image, to: dir + "/" + s.name + ".png")
    for code in s.codes where !read.contains(code.payload) {
        let corners = code.corners.map { "(\(Int($0.x.rounded())),\(Int($0.y.rounded())))" }.joined(separator: " ")
        print("miss \(s.name): version \(code.version), module \(f(code.moduleSize)) px, corners \(corners), zxing-cpp 3.x \(peer.contains(code.payload) ? "read it" : "missed it")")
    }
}

// MARK: Decode rates
var samplesByCategory: [(QRTestCorpus.Category, [QRTestCorpus.Sample])] = []
for category in QRTestCorpus.Category.allCases {
    // --only (outside --profile): the decode table for those categories alone.
    if let onlyCategories, !CommandLine.arguments.contains("--profile"), !onlyCategories.contains(category.rawValue) { continue }
    samplesByCategory.append((category, try QRTestCorpus.samples(category, count: samplesPerCategory, seed: seed)))
}

/// The frames with codes timed at a fixed size: six samples of every category, resized.
@MainActor func codedFrames(width: Int, height: Int) throws -> [PixelBuffer] {
    // The categories the cost tables have always used, so that runs of older builds compare.
    try samplesByCategory.filter { ![.tilted, .highVersion, .highVersionLarge].contains($0.0) }.flatMap { _, samples in
        try samples.prefix(6).map { s throws(CaptureError) in try QRTestCorpus.resized(s.image, width: width, height: height) }
    }
}

if CommandLine.arguments.contains("--other-types") {
    try runOtherTypes()
    exit(0)
}
if let i = CommandLine.arguments.firstIndex(of: "--rescue-costs") {
    try rescueCosts(Array(CommandLine.arguments[(i + 1)...].prefix { !$0.hasPrefix("--") }))
    exit(0)
}
if CommandLine.arguments.contains("--type-costs") {
    try typeSetCosts()
    exit(0)
}
/// The detector `--profile` and `--profile-code-free` run: `--profile-types 2d|all|TYPES` (default QR).
@MainActor func profiledDetector() throws -> (String?, CodeDetector) {
    let typesArgument = CommandLine.arguments.firstIndex(of: "--profile-types").flatMap { CommandLine.arguments.dropFirst($0 + 1).first }
    switch typesArgument {
    case nil: return (nil, cvcam)
    case "2d": return (typesArgument, try CodeDetector(metadataObjectTypes: CodeDetector.twoDimensionalTypes, passes: cvcamPasses))
    case "all": return (typesArgument, try CodeDetector(metadataObjectTypes: CodeDetector.availableMetadataObjectTypes, passes: cvcamPasses))
    case let names?:
        let types = Set(names.split(separator: ",").map { MetadataObjectType(rawValue: String($0)) })
        return (typesArgument, try CodeDetector(metadataObjectTypes: types, passes: cvcamPasses))
    }
}
if CommandLine.arguments.contains("--profile-code-free") {
    var frames = try noiseFrames(width: 640, height: 480)
    for path in photoPaths { frames.append(try QRTestCorpus.photo(at: path, width: 640, height: 480)) }
    let (typesArgument, profiled) = try profiledDetector()
    frames += try devsetCodeFreeFrames(width: 640, height: 480).prefix(60)
    // What one detection of each frame ran (behaviour, not time): finder triples read around
    // and texture read as cues show up here before they show in the median.
    let before = profiled.passCounts
    for frame in frames { _ = try? profiled.detect(in: frame) }
    let after = profiled.passCounts
    let end = Date().addingTimeInterval(15)
    var times: [Double] = []
    while Date() < end { for frame in frames { times.append(milliseconds { _ = try? profiled.detect(in: frame) }) } }
    print("code-free 640x480 (\(typesArgument ?? "qr")): median \(f(median(times))) ms over \(times.count); on the \(frames.count) frames once: \(after.zbarScans - before.zbarScans) ZBar scans, \(after.zxingReads - before.zxingReads) zxing-cpp reads")
    exit(0)
}
if CommandLine.arguments.contains("--profile") {
    // --only a,b: profile only those categories' frames (the table still names each).
    let only = CommandLine.arguments.firstIndex(of: "--only").map { i in
        Set(CommandLine.arguments[(i + 1)...].first?.split(separator: ",").map(String.init) ?? [])
    }
    let frames = try codedFrames(width: 640, height: 480)
    let (typesArgument, cvcam) = try profiledDetector()
    var times: [Double] = []
    // Per category: times, and the passes one detection of each frame ran (behaviour, not time).
    var byCategory: [String: (times: [Double], scans: Int, pixels: Int, finderChecks: Int, rescues: Int, zxingReads: Int, cues: (Int, Int, Int), frames: Int)] = [:]
    let end = Date().addingTimeInterval(20)
    var first = true
    while Date() < end {
        for (i, frame) in frames.enumerated() {
            let category = samplesByCategory[i / 6].0.rawValue
            if let only, !only.contains(category) { continue }
            let before = cvcam.passCounts
            let t = milliseconds { _ = try? cvcam.detect(in: frame) }
            times.append(t)
            let after = cvcam.passCounts
            byCategory[category, default: ([], 0, 0, 0, 0, 0, (0, 0, 0), 0)].times.append(t)
            if first {
                byCategory[category]!.scans += after.zbarScans - before.zbarScans
                byCategory[category]!.pixels += after.zbarPixels - before.zbarPixels
                byCategory[category]!.finderChecks += after.finderChecks - before.finderChecks
                byCategory[category]!.rescues += after.rescues - before.rescues
                byCategory[category]!.zxingReads += after.zxingReads - before.zxingReads
                byCategory[category]!.cues.0 += after.aztecCues - before.aztecCues
                byCategory[category]!.cues.1 += after.pdf417Cues - before.pdf417Cues
                byCategory[category]!.cues.2 += after.dataMatrixCues - before.dataMatrixCues
                byCategory[category]!.frames += 1
            }
        }
        first = false
    }
    print("640x480 with codes (\(typesArgument ?? "qr")): \(frames.count) frames, \(times.count) detections, median \(f(median(times))) ms")
    print("")
    print("| category | median ms | ZBar scans per frame | ZBar kilopixels per frame | finder checks per frame | rescues per frame | zxing-cpp reads per frame | frames whose cues opened a read (Aztec, PDF417, Data Matrix) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for (category, _) in samplesByCategory {
        guard let c = byCategory[category.rawValue], c.frames > 0 else { continue }
        let n = Double(c.frames)
        print("| \(category.rawValue) | \(f(median(c.times))) | \(f(Double(c.scans) / n)) | \(f(Double(c.pixels) / n / 1000, 0)) | \(f(Double(c.finderChecks) / n)) | \(f(Double(c.rescues) / n)) | \(f(Double(c.zxingReads) / n)) | \(c.cues.0), \(c.cues.1), \(c.cues.2) of \(c.frames) |")
    }
    exit(0)
}

print("Codes read exactly (wrong payloads: outputs matching no code of the frame); median ms per frame.")
print("")
print("| category | codes | plain ZBar | plain zxing-cpp 1.4 | zxing-cpp 3.x | cvcam | cvcam ms | ZBar ms | zxing-cpp 1.4 ms | zxing-cpp 3.x ms |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
var totalCodes = 0, totalZBar = 0, totalZXing = 0, totalZXing3 = 0, totalCvcam = 0
var totalWrong = [0, 0, 0, 0]
for (category, samples) in samplesByCategory {
    var codes = 0, z = 0, x = 0, x3 = 0, c = 0
    var wrong = [0, 0, 0, 0]
    var zt: [Double] = [], xt: [Double] = [], x3t: [Double] = [], ct: [Double] = []
    for s in samples {
        codes += s.codes.count
        var zf: [[UInt8]] = [], xf: [[UInt8]] = [], x3f: [[UInt8]] = [], cf: [[UInt8]] = []
        zt.append(milliseconds { zf = zbar.payloads(s.image) })
        xt.append(milliseconds { xf = zxing.payloads(s.image) })
        if let z3 = zxing3, let r = z3.read(try CodeImaging.gray(s.image), formats: "QRCode,MicroQRCode") {
            x3f = r.codes.map(\.bytes)
            x3t.append(r.ms)
        }
        ct.append(milliseconds { cf = (try? cvcam.detect(in: s.image))?.map(\.payload) ?? [] })
        z += hits(s.expectedPayloads, zf)
        x += hits(s.expectedPayloads, xf)
        x3 += hits(s.expectedPayloads, x3f)
        c += hits(s.expectedPayloads, cf)
        for (k, found) in [zf, xf, x3f, cf].enumerated() {
            wrong[k] += Set(found).subtracting(s.expectedPayloads).count
        }
        if let dir = saveMissesPath, hits(s.expectedPayloads, cf) < s.codes.count {
            try saveMiss(s, read: cf, peer: x3f, to: dir)
        }
    }
    totalCodes += codes
    totalZBar += z
    totalZXing += x
    totalZXing3 += x3
    totalCvcam += c
    for k in 0..<4 { totalWrong[k] += wrong[k] }
    func cell(_ n: Int, _ k: Int) -> String { "\(n)" + (wrong[k] > 0 ? " (\(wrong[k]) wrong)" : "") }
    print("| \(category) | \(codes) | \(cell(z, 0)) | \(cell(x, 1)) | \(zxing3 == nil ? "–" : cell(x3, 2)) | \(cell(c, 3)) | \(f(median(ct))) | \(f(median(zt))) | \(f(median(xt))) | \(f(median(x3t))) |")
}
@MainActor func totalCell(_ n: Int, _ k: Int) -> String { "**\(n)** (\(percent(n, totalCodes)))" + (totalWrong[k] > 0 ? ", \(totalWrong[k]) wrong" : "") }
print("| **all** | \(totalCodes) | \(totalCell(totalZBar, 0)) | \(totalCell(totalZXing, 1)) | \(zxing3 == nil ? "–" : totalCell(totalZXing3, 2)) | \(totalCell(totalCvcam, 3)) | | | | |")
print("")

// MARK: False decodes
var negatives: [(String, PixelBuffer)] = []
for path in photoPaths { negatives.append((URL(fileURLWithPath: path).lastPathComponent, try QRTestCorpus.photo(at: path))) }
for i in 0..<20 {
    negatives.append(("clutter-\(i)", try QRTestCorpus.background(width: 640, height: 480, seed: seed &+ UInt64(i))))
}
var zFalse = 0, xFalse = 0, x3False = 0, cFalse = 0
for (_, image) in negatives {
    zFalse += zbar.payloads(image).count
    xFalse += zxing.payloads(image).count
    x3False += zxing3?.read(try CodeImaging.gray(image), formats: "QRCode,MicroQRCode")?.codes.count ?? 0
    cFalse += (try cvcam.detect(in: image)).count
}
print("False decodes on \(negatives.count) code-free frames (\(photoPaths.count) fixture photos + 20 generated clutter frames): plain ZBar \(zFalse), plain zxing-cpp 1.4 \(xFalse), zxing-cpp 3.x \(zxing3 == nil ? "–" : String(x3False)), cvcam \(cFalse).")
print("")

/// Code-free textured frames: seeded gray noise (mean 112, σ 14, like a room in a webcam) and
/// generated clutter, six of each.
@MainActor func noiseFrames(width: Int, height: Int) throws -> [PixelBuffer] {
    var frames: [PixelBuffer] = []
    for i in 0..<6 {
        let f = try PixelBuffer(width: width, height: height, pixelFormat: .bgr)
        var dst = cvb_image(
            data: f.baseAddress.assumingMemoryBound(to: UInt8.self), width: Int32(f.width), height: Int32(f.height),
            stride: Int32(f.bytesPerRow), format: f.pixelFormat.rawValue)
        var err = cvb_error()
        _ = cvb_image_fill_noise(&dst, seed &+ UInt64(i), 112, 14, &err)
        frames.append(f)
        frames.append(try QRTestCorpus.background(width: width, height: height, seed: seed &+ 100 &+ UInt64(i)))
    }
    return frames
}

if CommandLine.arguments.contains("--finders") {
    let d = try CodeDetector()
    func seen(_ f: PixelBuffer) -> String {
        let b = d.passCounts
        let n = (try? d.detect(in: f).count) ?? -1
        let a = d.passCounts
        return a.finderChecks == b.finderChecks ? "-" : "\(a.findersSeen - b.findersSeen)\(n > 0 ? "+" : "")"
    }
    for (category, samples) in samplesByCategory { print(category, samples.map { seen($0.image) }.joined(separator: " ")) }
    for (w, h) in [(640, 480), (1280, 720)] { print("noise \(w)", try noiseFrames(width: w, height: h).map(seen).joined(separator: " ")) }
    print("photos", try photoPaths.map { p in seen(try QRTestCorpus.photo(at: p, width: 1280, height: 720)) }.joined(separator: " "))
    exit(0)
}

// MARK: Timing at fixed sizes
print("| frame size | frames | plain ZBar ms | plain zxing-cpp 1.4 ms | zxing-cpp 3.x ms | cvcam ms | cvcam / ZBar | cvcam / zxing-cpp 3.x |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for (w, h) in [(640, 480), (1280, 720)] {
    for kind in ["with codes", "no codes (photos)", "no codes (noise, clutter)"] {
        var frames: [PixelBuffer] = []
        if kind == "no codes (noise, clutter)" {
            frames = try noiseFrames(width: w, height: h)
        } else if kind == "with codes" {
            frames = try codedFrames(width: w, height: h)
        } else {
            for path in photoPaths { frames.append(try QRTestCorpus.photo(at: path, width: w, height: h)) }
        }
        var zt: [Double] = [], xt: [Double] = [], x3t: [Double] = [], ct: [Double] = []
        let grays = try frames.map { b throws(CaptureError) in try CodeImaging.gray(b) }
        for _ in 0..<3 {
            for (frame, gray) in zip(frames, grays) {
                zt.append(milliseconds { _ = zbar.payloads(frame) })
                xt.append(milliseconds { _ = zxing.payloads(frame) })
                if let r = zxing3?.read(gray, formats: "QRCode,MicroQRCode") { x3t.append(r.ms) }
                ct.append(milliseconds { _ = try? cvcam.detect(in: frame) })
            }
        }
        let label = "\(w)x\(h) \(kind)"
        print("| \(label) | \(frames.count) | \(f(median(zt))) | \(f(median(xt))) | \(f(median(x3t))) | \(f(median(ct))) | \(f(median(ct) / median(zt))) | \(f(median(ct) / median(x3t))) |")
    }
}
print("")

// MARK: Cost of the type sets `cvcam scan` could default to
/// The code-free images of the dev sets, read by path (never copied): the QR dev set's
/// negatives (`../shared/devsets/qr/negatives`) and every image of the face dev set
/// (`../shared/devsets/faces`: WIDER FACE photos and face-free images; none holds a code),
/// each resized to `width`×`height`. Empty, with a message, when the dev sets are absent.
@MainActor func devsetCodeFreeFrames(width: Int, height: Int) throws -> [PixelBuffer] {
    let shared = root.deletingLastPathComponent().appendingPathComponent("shared/devsets")
    var paths: [String] = []
    for dir in ["qr/negatives", "faces/images", "faces/negatives"] {
        let folder = shared.appendingPathComponent(dir)
        guard let walk = FileManager.default.enumerator(atPath: folder.path) else {
            print("(\(folder.path) is absent: its code-free images are left out of the cost table)")
            continue
        }
        let images = walk.compactMap { $0 as? String }.filter { ["jpg", "jpeg", "png"].contains(($0 as NSString).pathExtension.lowercased()) }
        paths += images.sorted().map { folder.path + "/" + $0 }
    }
    return try paths.map { p throws(CaptureError) in try QRTestCorpus.photo(at: p, width: width, height: height) }
}

/// `--rescue-costs DIR...`: what the QR perspective rescue and cvcam's own Aztec decoding cost on
/// code-free photos (every image in each folder, at 640x480): cvcam with both and without both,
/// for `scan`'s default types and for every type, interleaved over three rounds in one run.
/// Folders that are absent are skipped with a message.
@MainActor func rescueCosts(_ folders: [String]) throws {
    var with = cvcamPasses, without = cvcamPasses
    with.perspective = true
    with.aztecData = true
    without.perspective = false
    without.aztecData = false
    let sets: [(String, Set<MetadataObjectType>)] = [
        ("qr, microqr (`scan`'s default)", [.qr, .microQR]), ("every type", CodeDetector.availableMetadataObjectTypes),
    ]
    print("Rescue costs on code-free photos at 640x480 (CPU ms per frame, medians; before: no perspective rescue, no own Aztec decoding):")
    print("")
    print("| folder | frames | types | before ms | after ms | ratio | outputs before | outputs after | localisations before | after |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for folder in folders {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted().filter { name in
            [".jpg", ".jpeg", ".png", ".webp", ".bmp"].contains { name.lowercased().hasSuffix($0) }
        }
        guard !names.isEmpty else {
            print("rescue-costs: no images in \(folder); skipped")
            continue
        }
        let frames = try names.map { try QRTestCorpus.photo(at: folder + "/" + $0, width: 640, height: 480) }
        for (label, types) in sets {
            let before = try CodeDetector(metadataObjectTypes: types, passes: without)
            let after = try CodeDetector(metadataObjectTypes: types, passes: with)
            var tb: [Double] = [], ta: [Double] = []
            var ob = 0, oa = 0
            for round in 0..<3 {
                for frame in frames {
                    var nb = 0, na = 0
                    tb.append(milliseconds { nb = (try? before.detect(in: frame))?.count ?? 0 })
                    ta.append(milliseconds { na = (try? after.detect(in: frame))?.count ?? 0 })
                    if round == 0 {
                        ob += nb
                        oa += na
                    }
                }
            }
            print("| \(folder) | \(frames.count) | \(label) | \(f(median(tb))) | \(f(median(ta))) | \(f(median(ta) / median(tb))) | \(ob) | \(oa) | \(before.passCounts.localisations / 3) | \(after.passCounts.localisations / 3) |")
        }
    }
    print("")
}

/// CPU ms per 640x480 frame of a detector for each type set, on frames with a QR code and on
/// code-free frames (fixture photos, noise, clutter; and the dev sets' code-free images),
/// interleaved so that load hits all alike, in an order that turns frame by frame. Ratios are to `cvcam scan`'s QR + Micro QR default
/// before issue #31 in the same run: the issue allows every 2-D type by default at ≤ 1.2× on
/// code-free frames.
@MainActor func typeSetCosts() throws {
    let sets: [(String, Set<MetadataObjectType>)] = [
        ("qr", [.qr]),
        ("qr, microqr", [.qr, .microQR]),
        ("every 2-D type", CodeDetector.twoDimensionalTypes),
        ("every type (`--types all`)", CodeDetector.availableMetadataObjectTypes),
    ]
    let base = 1  // qr, microqr
    let detectors = try sets.map { try CodeDetector(metadataObjectTypes: $0.1, passes: cvcamPasses) }
    var empty = try noiseFrames(width: 640, height: 480)
    for path in photoPaths { empty.append(try QRTestCorpus.photo(at: path, width: 640, height: 480)) }
    let devset = try devsetCodeFreeFrames(width: 640, height: 480)
    let coded = try codedFrames(width: 640, height: 480)
    var te = [[Double]](repeating: [], count: sets.count), td = te, tc = te
    var devsetReads = [Int](repeating: 0, count: sets.count)
    // Per code-free frame (first round), whether the 2-D detector's cues opened a zxing-cpp read,
    // and of which kinds: what separates the mean from the median.
    var opened: [Bool] = []
    var openedKinds = (aztec: 0, pdf417: 0, dataMatrix: 0)
    var looksTaken = [Int](repeating: 0, count: sets.count)
    func noteOpened(_ before: CodeDetector.PassCounts, _ after: CodeDetector.PassCounts) {
        opened.append(after.zxingReads > before.zxingReads)
        openedKinds.aztec += after.aztecCues - before.aztecCues
        openedKinds.pdf417 += after.pdf417Cues - before.pdf417Cues
        openedKinds.dataMatrix += after.dataMatrixCues - before.dataMatrixCues
    }
    // Each frame's first detector reads it from cold caches: the order turns frame by frame.
    let order = { (i: Int) in detectors.indices.map { (detectors[($0 + i) % detectors.count], ($0 + i) % detectors.count) } }
    for round in 0..<3 {
        for (i, frame) in empty.enumerated() {
            for (d, k) in order(i) {
                let before = d.passCounts
                te[k].append(milliseconds { _ = try? d.detect(in: frame) })
                if round == 0 && k == 2 { noteOpened(before, d.passCounts) }
                if round == 0 { looksTaken[k] += d.passCounts.finderChecks - before.finderChecks }
            }
        }
        for (i, frame) in devset.enumerated() {
            for (d, k) in order(i) {
                var n = 0
                let before = d.passCounts
                td[k].append(milliseconds { n = (try? d.detect(in: frame))?.count ?? 0 })
                if round == 0 { devsetReads[k] += n }
                if round == 0 && k == 2 { noteOpened(before, d.passCounts) }
                if round == 0 { looksTaken[k] += d.passCounts.finderChecks - before.finderChecks }
            }
        }
        for (i, frame) in coded.enumerated() { for (d, k) in order(i) { tc[k].append(milliseconds { _ = try? d.detect(in: frame) }) } }
    }
    print("Cost per 640x480 frame by type set (CPU ms, median; \(empty.count) generated and fixture code-free frames, \(devset.count) dev-set code-free images (QR negatives, face photos), \(coded.count) frames with QR codes; three rounds interleaved; ratios to `qr, microqr` in this run):")
    print("")
    print("| types | code-free ms | ratio | dev-set code-free ms | ratio | codes reported there | with a code ms | ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for (k, set) in sets.enumerated() {
        print("| \(set.0) | \(f(median(te[k]))) | \(f(median(te[k]) / median(te[base]))) | \(f(median(td[k]))) | \(f(median(td[k]) / median(td[base]))) | \(devsetReads[k]) | \(f(median(tc[k]))) | \(f(median(tc[k]) / median(tc[base]))) |")
    }
    print("")
    let all = te[2] + td[2], qr = te[base] + td[base]
    let mean = { (xs: [Double]) in xs.reduce(0, +) / Double(max(xs.count, 1)) }
    print("Every 2-D type on all \(empty.count + devset.count) code-free frames: median \(f(median(all) / median(qr)))× `qr, microqr` (issue #31: ≤ 1.2×), mean \(f(mean(all) / mean(qr)))× (the frames whose cues open a read).")
    // The frames in the order te/td hold them per round: empty, then devset; three rounds.
    let perRound = empty.count + devset.count
    let closed = (0..<(3 * perRound)).filter { i in
        let j = i % perRound
        return !opened[j]
    }
    let at = { (k: Int, i: Int) -> Double in
        let round = i / perRound, j = i % perRound
        return j < empty.count ? te[k][round * empty.count + j] : td[k][round * devset.count + j - empty.count]
    }
    print("Cues opened a zxing-cpp read on \(opened.filter { $0 }.count) of \(perRound) code-free frames (Aztec \(openedKinds.aztec), PDF417 \(openedKinds.pdf417), Data Matrix \(openedKinds.dataMatrix)); on the others every 2-D type costs median \(f(median(closed.map { at(2, $0) }) / median(closed.map { at(base, $0) })))× `qr, microqr`. Finder looks taken on the code-free frames: \(sets.indices.map { "\(sets[$0].0) \(looksTaken[$0])" }.joined(separator: ", ")).")
    print("")
}
try typeSetCosts()

// MARK: Ablation: what each pass adds
if ablation {
    print("Ablation (each row removes one pass from the full pipeline):")
    print("")
    print("| pipeline | decoded | no-code ms 640x480 | noise ms 1280x720 |")
    print("|---|---:|---:|---:|")
    var variants: [(String, CodeDetector.Passes)] = [("full", CodeDetector.Passes()), ("ZBar only", .zbarOnly)]
    for name in ["inverted", "gate", "halfScale", "locate", "binarize", "locateMultiple", "threshold60", "threshold90", "finderGate", "finderLocate", "finderOffset0"] {
        var p = CodeDetector.Passes()
        switch name {
        case "inverted": p.inverted = false
        case "gate": p.gate = false
        case "halfScale": p.halfScale = false
        case "locate": p.locate = false
        case "locateMultiple": p.locateMultiple = true
        case "threshold60": p.detailThreshold = 60
        case "threshold90": p.detailThreshold = 90
        case "finderGate": p.finderGate = false
        case "finderLocate": p.finderLocate = false
        case "finderOffset0": p.finderThresholdOffset = 0
        default: p.binarize = false
        }
        variants.append((name.hasPrefix("locateM") || name.hasPrefix("thr") || name.hasPrefix("finderO") ? name : "without \(name)", p))
    }
    let noisy = try noiseFrames(width: 1280, height: 720)
    let empties = try photoPaths.map { p throws(CaptureError) in try QRTestCorpus.photo(at: p, width: 640, height: 480) }
    for (name, passes) in variants {
        let d = try CodeDetector(passes: passes)
        var n = 0
        var perCategory: [String] = []
        for (category, samples) in samplesByCategory {
            var k = 0
            for s in samples { k += hits(s.expectedPayloads, (try d.detect(in: s.image)).map(\.payload)) }
            n += k
            perCategory.append("\(category) \(k)")
        }
        var t: [Double] = []
        for frame in empties { t.append(milliseconds { _ = try? d.detect(in: frame) }) }
        var tn: [Double] = []
        for frame in noisy { tn.append(milliseconds { _ = try? d.detect(in: frame) }) }
        print("| \(name) | \(n)/\(totalCodes) (\(perCategory.joined(separator: ", "))) | \(f(median(t))) | \(f(median(tn))) |")
    }
}
