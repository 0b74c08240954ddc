// Arbitrary bytes as an .avi file through `VideoFileSource` (OpenCV's FFmpeg reader): opening,
// then every frame until the end, a truncation error, or a cap that bounds one input's time.
import CaptureKit
import FuzzSupport

runFuzzer { data, count in
    guard let start = data.map(UnsafeRawPointer.init) else { return 0 }
    withTemporaryFile(UnsafeRawBufferPointer(start: start, count: count), suffix: ".avi") { path in
        guard let source = try? VideoFileSource(path: path, pacing: .asFastAsPossible),
            let format = source.formats.first
        else { return }
        defer { source.close() }
        guard (try? source.open(format: format, frameDuration: MediaTime(value: 1, timescale: 30))) != nil else { return }
        for _ in 0..<64 {
            guard case .some(.some) = try? source.nextFrame(isCancelled: { false }) else { return }
        }
    }
    return 0
}
