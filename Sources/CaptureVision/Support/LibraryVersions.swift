import CVBridge

/// The C libraries under CaptureKit and their versions as loaded at run time
/// (`cvb_library_version`), for diagnostics such as `cvcam doctor`. Safe from any thread.
public enum LibraryVersions {
    /// One library: the name users know it by, and its version text.
    public struct Entry: Sendable, Equatable {
        public let name: String
        public let version: String
    }

    /// OpenCV, ZBar, zxing-cpp (its build-time version: 1.4 has no run-time call) and libavformat.
    public static var all: [Entry] {
        let libraries: [(String, cvb_library)] = [
            ("OpenCV", CVB_LIBRARY_OPENCV), ("ZBar", CVB_LIBRARY_ZBAR),
            ("zxing-cpp", CVB_LIBRARY_ZXING), ("libavformat", CVB_LIBRARY_AVFORMAT),
        ]
        return libraries.map { name, library in
            var buffer = [CChar](repeating: 0, count: 64)
            let status = cvb_library_version(library, &buffer, buffer.count)
            let text = status == 0 ? String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "unknown"
            return Entry(name: name, version: text)
        }
    }
}
