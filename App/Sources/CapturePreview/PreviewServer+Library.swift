import CaptureJobs
import CaptureKit
import Foundation
import Hummingbird
import HummingbirdWebSocket
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The dashboard's routes, over a `PreviewLibrary` (`cvcam serve` with a preview):
///
/// - `GET /dashboard.json`: every listed camera's faces in view, last code, and latest
///   snapshots and clips (each with the URLs below).
/// - `GET /cameras/<name>/snapshots/<file>`: a snapshot (`?download=1`: as an attachment).
/// - `GET /cameras/<name>/clips/<file>`: a clip, to download (Motion-JPEG AVI).
/// - `GET /cameras/<name>/clips/<file>/play.mjpeg`: the clip played in the browser, as a
///   Motion-JPEG stream (`multipart/x-mixed-replace`, what an `<img>` plays) at the clip's own
///   frame rate; its JPEGs are sent as stored, nothing is decoded or encoded. Browsers cannot
///   play AVI, and this costs the server a file read per frame.
/// - `GET /cameras/<name>/clips/<file>/poster.jpg`: the clip's first frame, as stored.
///
/// `<file>` is only ever a name the camera's listing can give (`PreviewLibrary.open`), never a
/// path; everything passes `PreviewAccess` first, like every other route. At most
/// `maximumPlaybacks` clips play at once (503 beyond), so viewers cannot pin the disk.
extension PreviewServer {
    /// Clips playing at once, across viewers.
    package static let maximumPlaybacks = 8
    /// Bytes read per write when a clip is downloaded.
    static let downloadChunk = 64 << 10

    /// Adds the dashboard's routes when the server has a library.
    func addLibraryRoutes(to router: Router<BasicWebSocketRequestContext>) {
        guard let library else { return }
        let cameras = self.cameras
        let playing = PlaybackCount()
        router.get("/dashboard.json") { _, _ -> Response in
            let all = cameras.names.map { name in PreviewDashboard.Camera(name: name, library: library) }
            return Self.text(PreviewMessage.json(PreviewDashboard(cameras: all)), type: "application/json")
        }
        router.get("/cameras/:name/snapshots/:file") { request, context -> Response in
            let (name, file) = try Self.names(context)
            guard let fd = library.open(.snapshots, of: name, file: file) else { throw HTTPError(.notFound) }
            let box = Descriptor(fd)
            guard let data = box.readAll(limit: 64 << 20) else { throw HTTPError(.notFound) }
            var headers: HTTPFields = [.contentType: "image/jpeg"]
            if request.uri.queryParameters.get("download") != nil {
                headers[.contentDisposition] = "attachment; filename=\"\(file)\""
            }
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
        }
        router.get("/cameras/:name/clips/:file") { _, context -> Response in
            let (name, file) = try Self.names(context)
            guard let fd = library.open(.clips, of: name, file: file) else { throw HTTPError(.notFound) }
            let box = Descriptor(fd)
            let size = box.size
            return Response(
                status: .ok,
                headers: [
                    .contentType: "video/x-msvideo", .contentDisposition: "attachment; filename=\"\(file)\"",
                    .contentLength: "\(size)",
                ],
                body: ResponseBody { writer in
                    // The size when asked: a clip still being written is sent as it was then.
                    var offset: Int64 = 0
                    while offset < size, let chunk = box.read(at: offset, count: min(Self.downloadChunk, Int(size - offset))), !chunk.isEmpty {
                        try await writer.write(ByteBuffer(bytes: chunk))
                        offset += Int64(chunk.count)
                    }
                    try await writer.finish(nil)
                })
        }
        router.get("/cameras/:name/clips/:file/poster.jpg") { _, context -> Response in
            let (name, file) = try Self.names(context)
            guard let fd = library.open(.clips, of: name, file: file),
                let reader = try? MJPEGAVIReader(fileDescriptor: fd, name: file), let jpeg = reader.nextFrame()
            else { throw HTTPError(.notFound) }
            return Response(status: .ok, headers: [.contentType: "image/jpeg"], body: .init(byteBuffer: ByteBuffer(bytes: jpeg)))
        }
        router.get("/cameras/:name/clips/:file/play.mjpeg") { _, context -> Response in
            let (name, file) = try Self.names(context)
            guard let fd = library.open(.clips, of: name, file: file) else { throw HTTPError(.notFound) }
            let box = Descriptor(fd)
            // Read the headers now, so a file that is no clip is a 404, not an empty stream.
            guard let probe = box.duplicate().flatMap({ try? MJPEGAVIReader(fileDescriptor: $0, name: file) }) else {
                throw HTTPError(.notFound)
            }
            let frame = Duration.microseconds(Int64((probe.frameDuration.seconds * 1e6).rounded()))
            guard playing.begin() else {
                throw HTTPError(.serviceUnavailable, message: "\(Self.maximumPlaybacks) clips are playing already; try again shortly\n")
            }
            return Response(
                status: .ok, headers: [.contentType: MJPEGFanOut.contentType],
                body: ResponseBody { writer in
                    defer { playing.end() }
                    guard let copy = box.duplicate(), let reader = try? MJPEGAVIReader(fileDescriptor: copy, name: file) else {
                        return try await writer.finish(nil)
                    }
                    let clock = ContinuousClock()
                    let start = clock.now
                    var shown = 0
                    // A viewer that went away makes the write throw, which ends the playback.
                    while let jpeg = reader.nextFrame() {
                        var part = ByteBuffer()
                        part.writeString(
                            "--\(MJPEGFanOut.boundary)\r\nContent-Type: image/jpeg\r\nContent-Length: \(jpeg.count)\r\n"
                                + "X-Frame-Number: \(shown)\r\n\r\n")
                        part.writeBytes(jpeg)
                        part.writeString("\r\n")
                        try await writer.write(part)
                        shown += 1
                        try await Task.sleep(until: start + frame * shown, clock: clock)
                    }
                    try await writer.finish(nil)
                })
        }
    }

    /// The camera and file names of a request; 404 unless the camera is listed.
    private static func names(_ context: BasicWebSocketRequestContext) throws -> (String, String) {
        guard let name = context.parameters.get("name"), PreviewCamera.isValidName(name), let file = context.parameters.get("file")
        else { throw HTTPError(.notFound) }
        return (name, file)
    }
}

/// The dashboard's data (`/dashboard.json`).
package struct PreviewDashboard: Encodable, Sendable {
    package struct File: Encodable, Sendable {
        package var name: String
        package var time: String
        package var bytes: Int64
        package var preFrames: Int?
        /// Where the page shows it (a snapshot; a clip's first frame).
        package var image: String
        /// A clip played in the page.
        package var play: String?
        /// The file to save.
        package var download: String
    }

    package struct Camera: Encodable, Sendable {
        package var name: String
        package var faceIDs: [Int]
        package var lastCode: PreviewLibrary.Facts.Code?
        package var snapshots: [File]
        package var clips: [File]

        package init(name: String, library: PreviewLibrary) {
            self.name = name
            let facts = library.facts(of: name)
            faceIDs = facts.faceIDs
            lastCode = facts.lastCode
            let (snapshots, clips) = library.recent(of: name)
            let base = PreviewServer.path(of: name)
            self.snapshots = snapshots.map {
                File(name: $0.name, time: $0.time, bytes: $0.bytes, preFrames: $0.preFrames,
                     image: "\(base)/snapshots/\($0.name)", play: nil, download: "\(base)/snapshots/\($0.name)?download=1")
            }
            self.clips = clips.map {
                File(name: $0.name, time: $0.time, bytes: $0.bytes, preFrames: nil, image: "\(base)/clips/\($0.name)/poster.jpg",
                     play: "\(base)/clips/\($0.name)/play.mjpeg", download: "\(base)/clips/\($0.name)")
            }
        }
    }

    package var cameras: [Camera]
}

/// How many clips are playing, bounded by `PreviewServer.maximumPlaybacks`.
///
/// Threading: thread-safe.
final class PlaybackCount: Sendable {
    private let count = Mutex(0)
    /// Counts one more playback; false (and not counted) at the limit.
    func begin() -> Bool {
        count.withLock {
            guard $0 < PreviewServer.maximumPlaybacks else { return false }
            $0 += 1
            return true
        }
    }
    func end() { count.withLock { $0 -= 1 } }
}

/// An open file's descriptor, closed when the last reference goes: responses that end before
/// their body runs (a viewer that left) leak nothing. The corresponding C functions are
/// `pread(2)`, `fstat(2)`, `dup(2)` and `close(2)`.
///
/// Threading: thread-safe (`pread` keeps no file position).
final class Descriptor: Sendable {
    let fd: Int32
    init(_ fd: Int32) { self.fd = fd }
    deinit { close(fd) }

    var size: Int64 {
        var st = stat()
        return fstat(fd, &st) == 0 ? Int64(st.st_size) : 0
    }

    /// A new descriptor of the same file, for an owner that closes it.
    func duplicate() -> Int32? {
        let copy = dup(fd)
        return copy >= 0 ? copy : nil
    }

    /// Up to `count` bytes at `offset`; nil on an error.
    func read(at offset: Int64, count: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        var total = 0
        while total < count {
            let n = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + total, count - total, off_t(offset + Int64(total))) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 { return nil }
            if n == 0 { break }
            total += n
        }
        return Array(bytes.prefix(total))
    }

    /// The whole file, when it is at most `limit` bytes.
    func readAll(limit: Int) -> [UInt8]? {
        let size = self.size
        guard size <= Int64(limit) else { return nil }
        return read(at: 0, count: Int(size))
    }
}
