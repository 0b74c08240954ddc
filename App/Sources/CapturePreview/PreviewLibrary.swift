import CaptureJobs
import CaptureKit
import Foundation
import Synchronization

/// What the dashboard shows of each camera beyond its video: the faces in view now, the last
/// code read, and its latest snapshots and clips, listed from the camera's own folders.
///
/// Files are found and served through `OwnFolder` and `OwnFileNames` only: a name is served
/// when it is, whole, a name cvcam gives that camera's files of that kind (so it holds no `/`,
/// no `..`, nothing but the camera's prefix, a time stamp and a fixed ending) and, opened
/// relative to the folder without following links (`openat` with O_NOFOLLOW), is a regular
/// file. A request never names a path, only such a name; anything else is 404.
///
/// Listing a folder costs a directory scan, so each camera's list is kept `listingMaxAge`
/// seconds however many pages ask; nothing is read while no page asks.
///
/// Threading: thread-safe; every member may be used from any thread or task.
package final class PreviewLibrary: Sendable {
    /// Where one kind of a camera's files is.
    package struct Shelf: Sendable, Equatable {
        package var folder: String
        package var prefix: String

        package init(folder: String, prefix: String) {
            self.folder = folder
            self.prefix = prefix
        }
    }

    /// One file on the dashboard.
    package struct Entry: Encodable, Sendable, Equatable {
        /// The file's name (what the file routes take).
        package var name: String
        /// Its modification time, RFC 3339 local.
        package var time: String
        package var bytes: Int64
        /// Snapshots: the frames written before it (`-pre-NN.jpg`).
        package var preFrames: Int?
    }

    /// The faces in view and the last code read, as the camera's events said.
    package struct Facts: Encodable, Sendable, Equatable {
        package var faceIDs: [Int] = []
        package var lastCode: Code?

        package struct Code: Encodable, Sendable, Equatable {
            /// "QR code", "EAN13 barcode".
            package var kind: String
            /// The payload as text (control characters shown as escapes), or "N bytes" when it is not text.
            package var text: String
            /// When it was read, RFC 3339 local.
            package var time: String
        }
    }

    private struct State {
        var shelves: [String: [FileKind: Shelf]] = [:]
        var facts: [String: Facts] = [:]
        var listings: [String: (made: Date, snapshots: [Entry], clips: [Entry])] = [:]
    }
    private let state = Mutex(State())

    /// Seconds a camera's listing is reused.
    package static let listingMaxAge = 2.0
    /// Most files of each kind listed per camera.
    package static let listed = 12

    package init() {}

    /// Sets where each camera's snapshots and clips are (a reload); cameras not named are forgotten.
    package func set(_ shelves: [String: [FileKind: Shelf]]) {
        state.withLock { s in
            s.shelves = shelves
            s.facts = s.facts.filter { shelves[$0.key] != nil }
            s.listings = [:]
        }
    }

    /// Records camera `name`'s metadata events (faces entering and leaving, codes read).
    package func record(_ events: [MetadataEvent], camera name: String, at wall: Date = Date()) {
        guard !events.isEmpty else { return }
        state.withLock { s in
            var facts = s.facts[name] ?? Facts()
            for event in events {
                switch event {
                case .faceEntered(let f): if !facts.faceIDs.contains(f.faceID) { facts.faceIDs.append(f.faceID) }
                case .faceLeft(let f): facts.faceIDs.removeAll { $0 == f.faceID }
                case .codeAppeared(let c):
                    facts.lastCode = .init(kind: PreviewMetadataObserver.codeName(c.type), text: Self.payloadText(c), time: LocalTimestamp(wall).rfc3339)
                default: break
                }
            }
            s.facts[name] = facts
        }
    }

    /// The camera's session ended: no face is in view any more.
    package func sessionEnded(camera name: String) {
        state.withLock { $0.facts[name]?.faceIDs = [] }
    }

    /// What camera `name`'s events said last.
    package func facts(of name: String) -> Facts { state.withLock { $0.facts[name] ?? Facts() } }

    /// The folder of camera `name`'s `kind`, if it has one.
    package func shelf(_ kind: FileKind, of name: String) -> Shelf? { state.withLock { $0.shelves[name]?[kind] } }

    /// Camera `name`'s latest snapshots and clips, newest first (at most `listed` each).
    package func recent(of name: String, now: Date = Date()) -> (snapshots: [Entry], clips: [Entry]) {
        if let cached = state.withLock({ $0.listings[name] }), now.timeIntervalSince(cached.made) < Self.listingMaxAge {
            return (cached.snapshots, cached.clips)
        }
        let snapshots = list(.snapshots, of: name), clips = list(.clips, of: name)
        state.withLock { $0.listings[name] = (now, snapshots, clips) }
        return (snapshots, clips)
    }

    private func list(_ kind: FileKind, of name: String) -> [Entry] {
        guard let shelf = shelf(kind, of: name), case .success(let folder) = OwnFolder.open(shelf.folder) else { return [] }
        defer { folder.close() }
        let names = OwnFileNames(kind: kind, prefix: shelf.prefix)
        guard case .success(let items) = folder.items(names) else { return [] }
        return items.suffix(Self.listed).reversed().compactMap { item in
            guard let main = item.files.first(where: { names.isMainFile($0.name) }) else { return nil }
            let pre = kind == .snapshots ? item.files.filter { $0.name.contains("-pre-") }.count : nil
            return Entry(name: main.name, time: LocalTimestamp(main.modified).rfc3339, bytes: main.bytes, preFrames: pre)
        }
    }

    /// Opens camera `name`'s file `file` of `kind` for reading, when `file` is one of the names
    /// its listing can give (see the type's comment); the caller owns the descriptor.
    package func open(_ kind: FileKind, of name: String, file: String) -> Int32? {
        guard let shelf = shelf(kind, of: name) else { return nil }
        let names = OwnFileNames(kind: kind, prefix: shelf.prefix)
        guard names.item(of: file) != nil, names.isMainFile(file), case .success(let folder) = OwnFolder.open(shelf.folder) else { return nil }
        defer { folder.close() }
        return folder.openForReading(file)
    }

    /// A payload for a page: its text with control characters escaped, at most 200
    /// characters, or "N bytes" for a binary payload. The page sets it as text, never as HTML.
    package static func payloadText(_ code: MetadataMachineReadableCodeObject) -> String {
        guard let text = code.stringValue else { return "\(code.payload.count) bytes" }
        let shown = TerminalText.escaped(text)
        return shown.count > 200 ? String(shown.prefix(200)) + "…" : shown
    }
}
