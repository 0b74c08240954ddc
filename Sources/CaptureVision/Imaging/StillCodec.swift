import CVBridge

#if canImport(Glibc)
import Glibc
#endif

/// Which images CaptureVision decodes without OpenCV's imgcodecs: JPEG and PNG, recognised by
/// the signatures OpenCV's own decoders check (FF D8 FF; the 8-byte PNG signature), so a file
/// goes to libjpeg-turbo or libpng exactly when `cv::imread` would hand it to them.
///
/// Threading: stateless; call from any thread.
enum StillCodec {
    static let jpegSignature: [UInt8] = [0xFF, 0xD8, 0xFF]
    static let pngSignature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    /// The codec for encoded bytes that start with `head`; nil for any other format.
    static func of(head: some Collection<UInt8>) -> cvb_still_codec? {
        if head.starts(with: jpegSignature) { return CVB_STILL_JPEG }
        if head.starts(with: pngSignature) { return CVB_STILL_PNG }
        return nil
    }

    static func of(bytes: UnsafeRawBufferPointer) -> cvb_still_codec? {
        of(head: bytes.prefix(pngSignature.count))
    }

    /// The codec for the file at `path` by its first bytes; nil for another format or when it
    /// cannot be read (the decoder that gets it then says why).
    static func of(file path: String) -> cvb_still_codec? {
        let fd = FilePathBytes.withCString(path) { open($0, O_RDONLY | O_CLOEXEC) }
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var head = [UInt8](repeating: 0, count: pngSignature.count)
        let n = head.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        return n > 0 ? of(head: head.prefix(n)) : nil
    }
}
