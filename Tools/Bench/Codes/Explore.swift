import CVBridge
@_spi(Benchmark) import CaptureKit
@_spi(Benchmark) import CaptureVision
import CaptureKitTesting
import Foundation

/// Raw ZBar costs at several scales and scan densities (development aid: `--explore`).
@MainActor func explore() {
    func view(_ b: PixelBuffer) -> cvb_image {
        cvb_image(
            data: b.baseAddress.assumingMemoryBound(to: UInt8.self), width: Int32(b.width), height: Int32(b.height),
            stride: Int32(b.bytesPerRow), format: b.pixelFormat.rawValue)
    }
    func gray(_ b: PixelBuffer) -> PixelBuffer {
        let g = try! PixelBuffer(width: b.width, height: b.height, pixelFormat: .gray)
        var s = view(b), d = view(g)
        var err = cvb_error()
        _ = cvb_image_convert(&s, &d, &err)
        return g
    }
    var err = cvb_error()
    let sc = cvb_code_scanner_create(&err)!
    let photos = photoPaths.map { gray(try! QRTestCorpus.photo(at: $0, width: 640, height: 480)) }
    let coded = QRTestCorpus.Category.allCases.flatMap { c in
        (try! QRTestCorpus.samples(c, count: 8, seed: seed)).map { (gray(try! QRTestCorpus.resized($0.image, width: 640, height: 480)), $0.expectedPayloads) }
    }
    for qrOnly in [false, true] {
        for density in [1, 2, 3] {
            for scale in [1.0, 0.5] {
                _ = cvb_code_scanner_set_config(sc, 0, 0, qrOnly ? 0 : 1)
                _ = cvb_code_scanner_set_config(sc, 64, 0, 1)
                _ = cvb_code_scanner_set_config(sc, 0, 0x100, Int32(density))
                _ = cvb_code_scanner_set_config(sc, 0, 0x101, Int32(density))
                func prep(_ g: PixelBuffer) -> PixelBuffer {
                    scale == 1 ? g : try! QRTestCorpus.resized(g, width: Int(Double(g.width) * scale), height: Int(Double(g.height) * scale))
                }
                var tp: [Double] = [], tc: [Double] = []
                var found = 0, total = 0
                for p in photos { let x = prep(p); var v = view(x); tp.append(milliseconds { _ = cvb_code_scanner_scan(sc, &v, &err) }) }
                for (c, e) in coded {
                    let x = prep(c); var v = view(x)
                    var n: Int32 = 0
                    tc.append(milliseconds { n = cvb_code_scanner_scan(sc, &v, &err) })
                    total += e.count
                    found += Int(max(n, 0))
                }
                print("qrOnly \(qrOnly) density \(density) scale \(scale): photos \(f(median(tp))) ms, coded \(f(median(tc))) ms, symbols \(found)/\(total)")
            }
        }
    }
}
