import CaptureJobs
import CaptureKit
import Foundation
import Yams

/// The configuration file before its keys are read: read within bounds, checked for shape, then
/// composed by Yams, so that no file — whatever it holds — can crash, hang or exhaust the daemon.
/// `serve --check`, the start and every SIGHUP reload go through it; a refusal is a
/// `ServeConfigError` with the line where it can say one, and a reload refused this way leaves
/// the running configuration alone.
///
/// The bounds (`Limits`, documented in Docs/security.md):
/// - the path must name a regular file (not a FIFO, a device such as /dev/zero, or a folder),
///   opened without blocking, of at most `maximumBytes`;
/// - the text must be UTF-8 without control bytes other than tab, line feed and carriage
///   return (a binary file is refused, not parsed);
/// - nesting — flow collections (`[`, `{`) inside each other plus indented blocks and `- - …`
///   chains — at most `maximumDepth` deep, measured by `YAMLShape` *before* Yams sees the text:
///   Yams composes recursively, and a few thousand brackets overflow the stack;
/// - at most `maximumAliases` aliases (`*name`), and the composed tree, aliases expanded, at
///   most `maximumNodes` values and `maximumDepth` deep (alias bombs, anchors nesting anchors);
/// - composing and reading run on a thread of their own with a large stack
///   (`parsingStackBytes`), so even a shape the pre-scan misjudged cannot overflow the caller's.
///
/// Threading: stateless; call from any thread.
package enum ServeConfigFile {
    /// The largest file read: far beyond any real configuration (10,000 cameras fit).
    package static let maximumBytes = 4 << 20
    /// Collections and blocks inside each other: a real file uses 5 or 6.
    package static let maximumDepth = 32
    /// Aliases (`*name`) in the file.
    package static let maximumAliases = 1_000
    /// Values in the composed tree with every alias expanded.
    package static let maximumNodes = 200_000
    /// The stack of the thread that composes and reads the file.
    package static let parsingStackBytes = 64 << 20

    // MARK: Reading

    /// The text of `path`, or a refusal saying why it cannot be a configuration file.
    /// The corresponding C calls are `open(O_RDONLY | O_NONBLOCK)`, `fstat` and `read`.
    package static func read(path: String) throws(ServeConfigError) -> String {
        func refuse(_ message: String) -> ServeConfigError {
            ServeConfigError(file: path, [.init(path: "", line: nil, message: message)])
        }
        // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever.
        let fd = FilePathBytes.withCString(path) { open($0, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY) }
        guard fd >= 0 else { throw refuse(openProblem(errno)) }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw refuse("cannot read the file: \(String(cString: strerror(errno)))") }
        switch st.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFDIR: throw refuse("is a folder, not a regular file")
        case S_IFIFO: throw refuse("is a FIFO (named pipe), not a regular file; cvcam reads only regular files")
        case S_IFCHR: throw refuse("is a character device, not a regular file; cvcam reads only regular files")
        case S_IFBLK: throw refuse("is a block device, not a regular file; cvcam reads only regular files")
        case S_IFSOCK: throw refuse("is a socket, not a regular file")
        default: throw refuse("is not a regular file")
        }
        guard st.st_size <= maximumBytes else { throw refuse(tooLarge(Int64(st.st_size))) }
        // Read at most one byte more than allowed: a file that grew since fstat is still bounded.
        var bytes = [UInt8](repeating: 0, count: maximumBytes + 1)
        var count = 0
        while count < bytes.count {
            let n = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + count, $0.count - count) }
            if n < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN { break }
                throw refuse("cannot read the file: \(String(cString: strerror(errno)))")
            }
            if n == 0 { break }
            count += n
        }
        guard count <= maximumBytes else { throw refuse(tooLarge(nil)) }
        bytes.removeSubrange(count...)
        return try text(of: bytes, file: path)
    }

    private static func openProblem(_ code: Int32) -> String {
        switch code {
        case ENOENT: "does not exist; give the path of the YAML configuration file"
        case EACCES, EPERM: "cannot be read by this user (permission denied); check its permissions"
        case ENOTDIR: "does not exist (a part of its path is not a folder)"
        case ELOOP: "cannot be opened: too many symbolic links"
        default: "cannot be opened: \(String(cString: strerror(code)))"
        }
    }

    private static func tooLarge(_ size: Int64?) -> String {
        "is \(size.map { "\($0) bytes" } ?? "larger than that"); a configuration file may hold at most \(maximumBytes) bytes (\(maximumBytes >> 20) MiB): is it the right file?"
    }

    /// `bytes` as text: UTF-8 (a byte-order mark is skipped) with no control bytes but tab, line
    /// feed and carriage return; else a refusal naming the line of the first bad byte.
    package static func text(of bytes: [UInt8], file: String) throws(ServeConfigError) -> String {
        var body = bytes[...]
        if body.starts(with: [0xEF, 0xBB, 0xBF]) { body = body.dropFirst(3) }
        func line(at index: Int) -> Int { body[..<index].reduce(1) { $1 == 0x0A ? $0 + 1 : $0 } }
        if let bad = body.firstIndex(where: { $0 < 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D || $0 == 0x7F }) {
            throw ServeConfigError(file: file, [
                .init(path: "", line: line(at: bad), message: String(format: "holds the control byte 0x%02x: this is binary data, not a YAML configuration file", body[bad]))
            ])
        }
        guard let text = String(validating: body, as: UTF8.self) else {
            // The first byte where decoding fails, for the line.
            var iterator = body.makeIterator()
            var decoder = UTF8()
            var consumed = body.startIndex
            loop: while true {
                switch decoder.decode(&iterator) {
                case .scalarValue(let scalar): consumed += UTF8.width(scalar)
                case .emptyInput, .error: break loop
                }
            }
            throw ServeConfigError(file: file, [
                .init(path: "", line: line(at: min(consumed, body.endIndex)), message: "is not UTF-8 text; save the file as UTF-8")
            ])
        }
        return text
    }

    // MARK: Composing

    /// `text` checked (`YAMLShape`), composed by Yams, and its composed tree checked; then
    /// `read` on the root, all on a thread with a `parsingStackBytes` stack.
    package static func compose<Result: Sendable>(
        _ text: String, file: String, read: @escaping @Sendable (Node?) -> Result
    ) throws(ServeConfigError) -> Result {
        let outcome = onLargeStack { () -> Swift.Result<Result, ServeConfigError> in
            do throws(ServeConfigError) {
                let shape = YAMLShape(text)
                if let deep = shape.firstTooDeep(maximumDepth) {
                    throw ServeConfigError(file: file, [
                        .init(path: "", line: deep, message: "nests deeper than \(maximumDepth) levels (brackets, braces or indented blocks inside each other); cvcam refuses it before parsing")
                    ])
                }
                if shape.aliases > maximumAliases {
                    throw ServeConfigError(file: file, [
                        .init(path: "", line: shape.aliasLine, message: "holds more than \(maximumAliases) aliases (*name); cvcam refuses it before parsing")
                    ])
                }
                let root: Node?
                do { root = try Yams.compose(yaml: text) } catch {
                    throw ServeConfigError(file: file, [problem(from: error)])
                }
                try checkExpanded(root, file: file)
                return .success(read(root))
            } catch {
                return .failure(error)
            }
        }
        return try outcome.get()
    }

    /// Yams' error without its quoted snippet (which could show a password from the file):
    /// the line, the column and libyaml's words.
    static func problem(from error: any Error) -> ServeConfigError.Problem {
        guard let yaml = error as? YamlError else { return .init(path: "", line: nil, message: "not valid YAML") }
        switch yaml {
        case .scanner(let context, let problem, let mark, _), .parser(let context, let problem, let mark, _),
            .composer(let context, let problem, let mark, _):
            let where_ = context.map { " (\($0.text) at line \($0.mark.line), column \($0.mark.column))" } ?? ""
            return .init(path: "", line: mark.line, message: "not valid YAML: \(problem) at column \(mark.column)\(where_)")
        case .reader(let problem, let offset, _, _):
            return .init(path: "", line: nil, message: "not valid YAML: \(problem)" + (offset.map { " at byte \($0)" } ?? ""))
        case .dataCouldNotBeDecoded:
            return .init(path: "", line: nil, message: "not valid YAML: the file is not UTF-8 text")
        default:
            return .init(path: "", line: nil, message: "not valid YAML")
        }
    }

    /// Counts the composed tree with aliases expanded, without recursion: too many values or
    /// too deep (anchors holding aliases of anchors) is refused.
    static func checkExpanded(_ root: Node?, file: String) throws(ServeConfigError) {
        guard let root else { return }
        var pending: [(Node, Int)] = [(root, 1)]
        var count = 0
        while let (node, depth) = pending.popLast() {
            count += 1
            guard count <= maximumNodes else {
                throw ServeConfigError(file: file, [
                    .init(path: "", line: node.mark?.line, message: "expands to more than \(maximumNodes) values (aliases of aliases?); cvcam refuses it")
                ])
            }
            guard depth <= maximumDepth else {
                throw ServeConfigError(file: file, [
                    .init(path: "", line: node.mark?.line, message: "nests deeper than \(maximumDepth) levels once its aliases are expanded; cvcam refuses it")
                ])
            }
            switch node {
            case .scalar: break
            case .sequence(let items): for item in items { pending.append((item, depth + 1)) }
            case .mapping(let pairs):
                for (key, value) in pairs {
                    pending.append((key, depth + 1))
                    pending.append((value, depth + 1))
                }
            }
        }
    }

    /// Runs `work` on a thread with a `parsingStackBytes` stack and waits for it.
    /// The corresponding C calls are `pthread_attr_setstacksize`, `pthread_create` and `pthread_join`.
    private static func onLargeStack<T>(_ work: @escaping () -> T) -> T {
        let box = LargeStackWork(work)
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setstacksize(&attributes, parsingStackBytes)
        var thread = pthread_t()
        let context = Unmanaged.passRetained(box as AnyObject).toOpaque()
        let created = pthread_create(&thread, &attributes, { raw in
            let box = Unmanaged<AnyObject>.fromOpaque(raw!).takeRetainedValue() as! any LargeStackRunnable
            box.run()
            return nil
        }, context)
        guard created == 0 else {
            // No thread (resources exhausted): run here; the pre-scan's bound still holds.
            Unmanaged<AnyObject>.fromOpaque(context).release()
            return work()
        }
        pthread_join(thread, nil)
        return box.result!
    }
}

/// What `onLargeStack`'s thread runs.
private protocol LargeStackRunnable: AnyObject {
    func run()
}

/// The work of `onLargeStack` and its result; handed to the thread, read after the join.
private final class LargeStackWork<T>: LargeStackRunnable {
    let work: () -> T
    var result: T?
    init(_ work: @escaping () -> T) { self.work = work }
    func run() { result = work() }
}

/// How deep a YAML text nests, measured on its characters without parsing it, so that a file
/// nesting thousands of levels is refused before a recursive parser sees it.
///
/// It follows YAML closely enough to count what a parser would nest: flow collections (`[`,
/// `{`) outside quoted scalars and comments, indentation levels of block collections, and
/// `- ` / `? ` chains on one line. Where it cannot tell, it counts: a bracket inside plain text
/// counts as an opening, so it may over-estimate (refusing a file nobody writes) but a quoted
/// scalar is recognised only where YAML starts one, so it never hides real nesting.
///
/// Threading: a value type; use it anywhere.
package struct YAMLShape {
    /// Each line's nesting depth, by line number (1-based): the deepest point on it.
    package private(set) var depths: [Int] = []
    /// Aliases (`*name` where a node starts).
    package private(set) var aliases = 0
    /// The line of the alias that passed `ServeConfigFile.maximumAliases`, when one did.
    package private(set) var aliasLine: Int?

    /// The first line deeper than `limit`, or nil.
    package func firstTooDeep(_ limit: Int) -> Int? { depths.firstIndex { $0 > limit }.map { $0 + 1 } }

    package init(_ text: String) {
        var scanner = Scanner()
        for line in text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            var bytes = Array(line)
            if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
            depths.append(scanner.scan(bytes))
            if scanner.aliases > ServeConfigFile.maximumAliases && aliasLine == nil { aliasLine = depths.count }
        }
        aliases = scanner.aliases
    }

    /// The scanner's state from line to line.
    private struct Scanner {
        enum Quote { case none, single, double }
        var quote = Quote.none
        var flow = 0
        /// Inside flow collections: whether a node may start where the last line ended.
        var flowNodeStart = true
        /// Indentation of the open block levels.
        var blocks: [Int] = []
        /// A block scalar (`|`, `>`) is open: lines indented more than this are its text.
        var blockScalarParent: Int?
        /// The last line ended in plain text: lines indented more than this continue it.
        var plainParent: Int?
        var aliases = 0

        static let space = UInt8(ascii: " ")
        static let tab = UInt8(ascii: "\t")

        mutating func scan(_ line: [UInt8]) -> Int {
            let indent = line.prefix { $0 == Self.space }.count
            let blank = line.allSatisfy { $0 == Self.space || $0 == Self.tab }
            if let parent = blockScalarParent {
                if blank || indent > parent { return depth(0) }
                blockScalarParent = nil
            }
            var inlineLevels = 0
            // Whether a node may start here (where a quote opens a quoted scalar, `|` a block
            // scalar, `*` an alias).
            var nodeStart = true
            // The column of the block node the line's plain text or block scalar belongs to.
            var structureColumn = indent
            var tokenColumn = indent
            if quote == .none && flow == 0 {
                if blank || line[indent...].first == UInt8(ascii: "#") { return depth(0) }
                if let parent = plainParent, indent > parent {
                    nodeStart = false  // the plain scalar of a line above goes on
                } else {
                    plainParent = nil
                    while let last = blocks.last, last >= indent { blocks.removeLast() }
                    blocks.append(indent)
                }
            } else if quote == .none {
                nodeStart = flowNodeStart
            }
            var deepest = depth(0)
            var lastSignificant: UInt8 = 0
            var plainText = false
            var i = indent
            while i < line.count {
                let c = line[i]
                switch quote {
                case .single:
                    if c == UInt8(ascii: "'") {
                        if i + 1 < line.count && line[i + 1] == UInt8(ascii: "'") {
                            i += 2
                            continue
                        }
                        quote = .none
                        lastSignificant = c
                    }
                    i += 1
                    continue
                case .double:
                    if c == UInt8(ascii: "\\") {
                        i += 2
                        continue
                    }
                    if c == UInt8(ascii: "\"") {
                        quote = .none
                        lastSignificant = c
                    }
                    i += 1
                    continue
                case .none: break
                }
                let next: UInt8? = i + 1 < line.count ? line[i + 1] : nil
                let followedBySpace = next == nil || next == Self.space || next == Self.tab
                let afterSpace = i == 0 || line[i - 1] == Self.space || line[i - 1] == Self.tab
                switch c {
                case Self.space, Self.tab:
                    i += 1
                    continue
                case UInt8(ascii: "#") where afterSpace:
                    i = line.count  // a comment
                    continue
                case UInt8(ascii: "'") where nodeStart, UInt8(ascii: "\"") where nodeStart:
                    quote = c == UInt8(ascii: "'") ? .single : .double
                    tokenColumn = i
                    nodeStart = false
                    plainText = false
                case UInt8(ascii: "&") where nodeStart, UInt8(ascii: "!") where nodeStart:
                    // An anchor or a tag: the node itself follows it.
                    while i + 1 < line.count, line[i + 1] != Self.space, line[i + 1] != Self.tab { i += 1 }
                    tokenColumn = i
                    plainText = false
                case UInt8(ascii: "["), UInt8(ascii: "{"):
                    // Counted wherever it stands outside quotes and comments: inside plain text
                    // it is only an over-estimate.
                    flow += 1
                    nodeStart = true
                    plainText = false
                case UInt8(ascii: "]"), UInt8(ascii: "}"):
                    flow = max(0, flow - 1)
                    nodeStart = false
                    plainText = false
                case UInt8(ascii: ",") where flow > 0:
                    nodeStart = true
                    plainText = false
                case UInt8(ascii: "-") where nodeStart && followedBySpace && flow == 0,
                    UInt8(ascii: "?") where nodeStart && followedBySpace:
                    if flow == 0 {
                        inlineLevels += 1
                        structureColumn = i
                    }
                    nodeStart = true
                    plainText = false
                case UInt8(ascii: ":")
                where followedBySpace || (flow > 0 && (lastSignificant == UInt8(ascii: "\"") || lastSignificant == UInt8(ascii: "'"))):
                    if flow == 0 { structureColumn = tokenColumn }
                    nodeStart = true
                    plainText = false
                case UInt8(ascii: "|") where nodeStart && flow == 0, UInt8(ascii: ">") where nodeStart && flow == 0:
                    // A block scalar when only indicators (digits, +, -) and a comment follow.
                    let rest = line[(i + 1)...].prefix { $0 != UInt8(ascii: "#") }
                    if rest.allSatisfy({ $0 == Self.space || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "-") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) {
                        blockScalarParent = structureColumn
                        i = line.count
                        continue
                    }
                    tokenColumn = i
                    nodeStart = false
                    plainText = true
                case UInt8(ascii: "*") where nodeStart:
                    aliases += 1
                    nodeStart = false
                    plainText = false
                default:
                    if nodeStart { tokenColumn = i }
                    nodeStart = false
                    plainText = true
                }
                lastSignificant = c
                deepest = max(deepest, depth(inlineLevels))
                i += 1
            }
            deepest = max(deepest, depth(inlineLevels))
            if flow > 0 { flowNodeStart = nodeStart } else { flowNodeStart = true }
            // Plain text running to the end of a block line may go on in the lines below it.
            if quote == .none && flow == 0 && plainText && plainParent == nil {
                plainParent = structureColumn
            }
            return deepest
        }

        private func depth(_ inline: Int) -> Int { blocks.count + inline + flow }
    }
}
