// The movie output's MJPEG-in-AVI writer, read back by `VideoFileSource`: the input chooses the
// size, rate, frame count, JPEG quality, where fragments fall, whether the file is finished, and
// the pixels. A finished file must give back exactly the frames written, at the size written;
// an unfinished one at least the frames up to its last fragment (the writer's promise to a
// killed process).
@testable import CaptureKit
import FuzzSupport
import Foundation

runFuzzer { data, count in
    guard let start = data.map(UnsafeRawPointer.init) else { return 0 }
    let input = Array(UnsafeRawBufferPointer(start: start, count: count))
    guard input.count >= 6 else { return 0 }
    let width = 1 + Int(input[0]) % 96, height = 1 + Int(input[1]) % 96
    let frameCount = 1 + Int(input[2]) % 8
    let quality = Int(input[3]) % 101
    let fragmentMask = input[4], finishes = input[5] & 1 == 0
    let frameDuration = MediaTime(value: 1 + Int64(input[5] >> 1) % 4, timescale: 1 + Int32(input[5] >> 3) % 60)
    let pixels = input.count > 6 ? Array(input[6...]) : [0]

    let path = NSTemporaryDirectory() + "cvcam-fuzz-roundtrip-\(getpid()).avi"
    unlink(path)
    defer { unlink(path) }
    var fragmented = 0
    do {
        let writer = try MJPEGAVIWriter(path: path, width: width, height: height, frameDuration: frameDuration, calls: SystemFileCalls())
        let pool = PixelBufferPool(width: width, height: height, pixelFormat: .bgr)
        for frame in 0..<frameCount {
            let buffer = try pool.makeBuffer()
            let row = buffer.bytesPerRow
            let base = buffer.baseAddress.assumingMemoryBound(to: UInt8.self)
            for y in 0..<height {
                for x in 0..<(width * 3) { base[y * row + x] = pixels[(frame * 7 + y * width * 3 + x) % pixels.count] }
            }
            try writer.append(jpeg: Data(ImageFile.encode(buffer, as: .jpeg(quality: quality))))
            if fragmentMask & (1 << frame) != 0 {
                try writer.fragment()
                fragmented = frame + 1
            }
        }
        if finishes { try writer.finish() } else { writer.abandon() }
    } catch {
        fatalError("writing a \(width)x\(height) AVI of \(frameCount) frames failed: \(error)")
    }

    let source: VideoFileSource
    do { source = try VideoFileSource(path: path, pacing: .asFastAsPossible) } catch {
        if !finishes && fragmented == 0 { return 0 }  // only the header was promised
        fatalError("reading back a \(width)x\(height) AVI of \(frameCount) frames failed: \(error)")
    }
    defer { source.close() }
    guard let format = source.formats.first, format.dimensions.width == width, format.dimensions.height == height else {
        fatalError("wrote \(width)x\(height), read back \(source.formats)")
    }
    if finishes { precondition(source.declaredFrameCount == frameCount, "wrote \(frameCount) frames, the file declares \(source.declaredFrameCount)") }
    var read = 0
    do {
        try source.open(format: format, frameDuration: frameDuration)
        while let frame = try source.nextFrame(isCancelled: { false }) {
            precondition(frame.pixelBuffer.width == width && frame.pixelBuffer.height == height, "frame \(read) has another size")
            read += 1
        }
    } catch where !finishes {
        // An unfinished file may end early, but not before its last fragment (checked below).
    } catch {
        fatalError("frame \(read) of a finished \(frameCount)-frame AVI failed: \(error)")
    }
    if finishes {
        precondition(read == frameCount, "wrote \(frameCount) frames, read back \(read)")
    } else {
        precondition(read >= fragmented && read <= frameCount, "fragmented at \(fragmented) of \(frameCount) frames, read back \(read)")
    }
    return 0
}
