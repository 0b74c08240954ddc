import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore
import Synchronization

/// The bounds every HTTP server of cvcam keeps (the preview and `/metrics`), said once in
/// Docs/security.md and in `cvcam preview --help`.
///
/// Threading: a value type; thread-safe.
package struct HTTPServerLimits: Sendable, Equatable {
    /// The request line (`GET /path HTTP/1.1`); longer: 414 URI Too Long.
    package var maximumRequestLineBytes = 8 << 10
    /// The whole request head, request line and headers; larger: 431.
    package var maximumHeadBytes = 32 << 10
    /// Header fields in one request; more: 431.
    package var maximumHeaderCount = 100
    /// Seconds from a connection's start, or from the first byte of a request, to the end of
    /// that request's head; slower (slowloris): 408 and closed.
    package var headTimeout: Double = 10
    /// Seconds a connection may stay open with no request in progress after a response.
    package var idleTimeout: Double = 60
    /// Open connections from one client address; more: 503 and closed.
    package var maximumConnectionsPerAddress = 32
    /// Open connections in all; more: 503 and closed.
    package var maximumConnections = 256
    /// Seconds a refused connection is read and discarded before it is closed, so the client
    /// gets the answer rather than a reset.
    package var lingerAfterRefusal: Double = 2

    package init() {}

    /// The limits cvcam uses.
    package static let standard = HTTPServerLimits()
}

/// What a server checks before Hummingbird sees a byte: the limits, the `Host` names it answers
/// to, and the connections it holds (shared by all its connections).
///
/// Threading: thread-safe.
package struct HTTPRequestPolicy: Sendable {
    package var limits: HTTPServerLimits
    package var hosts: HostAllowlist
    /// How the refusal of an unknown host tells the user to add one (`--allow-host NAME`).
    package var allowHostHint: String
    package let connections: HTTPConnectionBudget

    package init(limits: HTTPServerLimits = .standard, hosts: HostAllowlist, allowHostHint: String) {
        self.limits = limits
        self.hosts = hosts
        self.allowHostHint = allowHostHint
        connections = HTTPConnectionBudget(limits: limits)
    }

    /// An HTTP/1 server builder whose every connection passes `HTTPConnectionGuard` first, with
    /// Hummingbird's idle timeout set to `limits.idleTimeout`.
    package func http1() -> HTTPServerBuilder {
        let policy = self
        return HTTPServerBuilder { responder in
            GuardedHTTPChannel(
                inner: HTTP1Channel(responder: responder, configuration: .init(idleTimeout: policy.idleTimeout)), policy: policy)
        }
    }

    /// An HTTP/1 server builder with WebSocket upgrades through `webSocketRouter`, every
    /// connection passing `HTTPConnectionGuard` first.
    package func http1WebSocketUpgrade<Builder: HTTPResponderBuilder>(webSocketRouter: Builder) -> HTTPServerBuilder
    where Builder.Responder.Context: WebSocketRequestContext {
        let policy = self
        let webSocketResponder = webSocketRouter.buildResponder()
        return HTTPServerBuilder { responder in
            GuardedHTTPChannel(
                inner: HTTP1WebSocketUpgradeChannel(
                    responder: responder, webSocketResponder: webSocketResponder,
                    configuration: .init(http1: .init(idleTimeout: policy.idleTimeout))),
                policy: policy)
        }
    }

    /// `limits.idleTimeout` as NIO takes it.
    package var idleTimeout: TimeAmount { .milliseconds(Int64(limits.idleTimeout * 1000)) }
}

/// Connections a server holds, per client address and in all.
///
/// Threading: thread-safe (a mutex).
package final class HTTPConnectionBudget: Sendable {
    private let limits: HTTPServerLimits
    private let state = Mutex<(total: Int, byAddress: [String: Int])>((0, [:]))

    package init(limits: HTTPServerLimits) { self.limits = limits }

    /// Takes a place for a connection from `address`; nil when there is one, else why not.
    package func acquire(_ address: String) -> String? {
        state.withLock { state in
            if state.total >= limits.maximumConnections {
                return "the server holds its \(limits.maximumConnections) connections already; try again later"
            }
            if state.byAddress[address, default: 0] >= limits.maximumConnectionsPerAddress {
                return "your address holds \(limits.maximumConnectionsPerAddress) connections already; close some and try again"
            }
            state.total += 1
            state.byAddress[address, default: 0] += 1
            return nil
        }
    }

    package func release(_ address: String) {
        state.withLock { state in
            state.total -= 1
            let left = state.byAddress[address, default: 1] - 1
            state.byAddress[address] = left > 0 ? left : nil
        }
    }

    /// Connections held now (tests).
    package var held: Int { state.withLock { $0.total } }
}

/// A Hummingbird child channel (`HTTP1Channel`, `HTTP1WebSocketUpgradeChannel`) with an
/// `HTTPConnectionGuard` in front of its pipeline.
///
/// Threading: a value type; Hummingbird calls it on the connection's event loop.
package struct GuardedHTTPChannel<Inner: ServerChildChannel>: ServerChildChannel {
    package typealias Value = Inner.Value
    package let inner: Inner
    package let policy: HTTPRequestPolicy

    package init(inner: Inner, policy: HTTPRequestPolicy) {
        self.inner = inner
        self.policy = policy
    }

    package func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        do {
            // First in the pipeline: it sees the socket's bytes before any HTTP decoder.
            try channel.pipeline.syncOperations.addHandler(HTTPConnectionGuard(policy: policy, logger: logger), position: .first)
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        return inner.setup(channel: channel, logger: logger)
    }

    package func handle(value: Value, logger: Logger) async {
        // What goes wrong on one connection is the client's doing (it went away before its
        // request, or was refused): said at debug level only, so clients cannot fill the log.
        var connectionLogger = logger
        if connectionLogger.logLevel > .debug { connectionLogger.logLevel = .critical }
        await inner.handle(value: value, logger: connectionLogger)
    }
}

/// The first handler of every connection of cvcam's HTTP servers: it reads each request head
/// from the raw bytes, and passes it on only when it is within bounds, well-formed, for a
/// method the server has and a host it answers to. Otherwise it answers itself and closes:
///
/// | what | answer |
/// |---|---|
/// | too many connections (`HTTPConnectionBudget`) | 503 |
/// | request line over `maximumRequestLineBytes` | 414 |
/// | head over `maximumHeadBytes`, or more than `maximumHeaderCount` fields | 431 |
/// | a method that is not HTTP's (or TLS, or other bytes that are not HTTP) | 501 (400) |
/// | POST, PUT, DELETE, … | 405, `Allow: GET, HEAD` |
/// | a body (`Content-Length` above 0, `Transfer-Encoding`) | 413 |
/// | a version but 1.0 and 1.1 | 505 |
/// | malformed line, no or two `Host` headers (HTTP/1.1) | 400 |
/// | a `Host` the server does not answer to (`HostAllowlist`) | 421 |
/// | no whole head within `headTimeout` | 408 (nothing, when nothing came) |
///
/// After a refusal it writes the answer, shuts its side of the connection and discards what
/// still arrives for `lingerAfterRefusal` seconds, then closes. After a WebSocket upgrade (the
/// server answered `101`) it passes everything through.
///
/// Threading: a NIO handler; used on its channel's event loop only.
package final class HTTPConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    package typealias InboundIn = ByteBuffer
    package typealias InboundOut = ByteBuffer
    package typealias OutboundIn = IOData
    package typealias OutboundOut = IOData

    private enum State {
        /// Reading request heads; `pending` holds the bytes of the one begun.
        case heads
        /// A request asking for an upgrade was passed on; its answer decides what follows.
        case awaitingUpgrade
        /// Upgraded (WebSocket): bytes pass untouched.
        case passthrough
        /// Refused: what arrives is discarded until the connection closes.
        case refused
    }

    private let policy: HTTPRequestPolicy
    private let logger: Logger
    private var state = State.heads
    private var pending = ByteBuffer()
    private var scanner = HTTPHeadScanner()
    private var address: String?
    private var headTimer: Scheduled<Void>?
    private var lingerTimer: Scheduled<Void>?

    package init(policy: HTTPRequestPolicy, logger: Logger) {
        self.policy = policy
        self.logger = logger
    }

    // MARK: Connection

    package func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { start(context) }
    }

    package func channelActive(context: ChannelHandlerContext) {
        start(context)
        context.fireChannelActive()
    }

    private func start(_ context: ChannelHandlerContext) {
        guard address == nil, state == .heads else { return }
        let client = context.channel.remoteAddress?.ipAddress ?? "unknown"
        if let why = policy.connections.acquire(client) {
            refuse(context, 503, "Service Unavailable", why, extra: "Retry-After: 5\r\n")
            return
        }
        address = client
        armHeadTimer(context)
    }

    package func channelInactive(context: ChannelHandlerContext) {
        finish()
        context.fireChannelInactive()
    }

    package func handlerRemoved(context: ChannelHandlerContext) { finish() }

    private func finish() {
        headTimer?.cancel()
        lingerTimer?.cancel()
        headTimer = nil
        lingerTimer = nil
        if let address {
            policy.connections.release(address)
            self.address = nil
        }
    }

    package func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if state == .refused, let event = event as? ChannelEvent, event == .inputClosed {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    // MARK: Inbound

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        switch state {
        case .passthrough: context.fireChannelRead(data)
        case .refused: return
        case .awaitingUpgrade:
            pending.writeBuffer(&bytes)
            if pending.readableBytes > policy.limits.maximumHeadBytes {
                refuse(context, 400, "Bad Request", "nothing may follow an upgrade request before its answer")
            }
        case .heads:
            if pending.readableBytes == 0 && headTimer == nil { armHeadTimer(context) }
            pending.writeBuffer(&bytes)
            readHeads(context)
        }
    }

    /// Passes on every whole, acceptable head in `pending`; refuses at the first that is not.
    /// Each byte is looked at once by `scanner` (a slow client sending a byte at a time costs
    /// no more than a fast one); a whole head is parsed once.
    private func readHeads(_ context: ChannelHandlerContext) {
        var forwarded = false
        defer { if forwarded { context.flush() } }
        while state == .heads {
            if scanner.isAtStart {
                // Empty lines before a request line are ignored (RFC 9112, 2.2).
                while let first = pending.readableBytesView.first, first == 0x0D || first == 0x0A { pending.moveReaderIndex(forwardBy: 1) }
            }
            guard pending.readableBytes > 0 else {
                pending.discardReadBytes()
                return
            }
            switch scanner.feed(pending.readableBytesView, limits: policy.limits) {
            case .needMore: return
            case .refuse(let refusal):
                refuse(context, refusal.status, refusal.reason, refusal.message)
                return
            case .complete(let length):
                scanner = HTTPHeadScanner()
                let head = HTTPHead(pending.readableBytesView.prefix(length))
                if let refusal = head.refusal(policy: policy) {
                    refuse(context, refusal.status, refusal.reason, refusal.message, extra: refusal.extra)
                    return
                }
                let slice = pending.readSlice(length: length)!
                headTimer?.cancel()
                headTimer = nil
                context.fireChannelRead(wrapInboundOut(slice))
                forwarded = true
                if head.asksForUpgrade {
                    state = .awaitingUpgrade
                    return
                }
            }
        }
    }

    private func armHeadTimer(_ context: ChannelHandlerContext) {
        headTimer?.cancel()
        let timeout = policy.limits.headTimeout
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        headTimer = context.eventLoop.scheduleTask(in: .milliseconds(Int64(timeout * 1000))) {
            let (handler, context) = loopBound.value
            handler.headTimer = nil
            guard handler.state == .heads else { return }
            if handler.pending.readableBytes == 0 {
                handler.state = .refused
                context.close(promise: nil)
            } else {
                handler.refuse(context, 408, "Request Timeout", "the request's head did not arrive within \(Self.seconds(timeout))")
            }
        }
    }

    // MARK: Outbound

    package func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if state == .awaitingUpgrade, case .byteBuffer(let buffer) = unwrapOutboundIn(data) {
            // The first bytes of the answer: `HTTP/1.1 101` means the connection is a WebSocket now.
            let switched = buffer.readableBytesView.starts(with: Array("HTTP/1.1 101".utf8))
            state = switched ? .passthrough : .heads
            if switched, pending.readableBytes > 0 {
                let rest = pending
                pending = ByteBuffer()
                context.fireChannelRead(wrapInboundOut(rest))
            } else if !switched {
                let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
                context.eventLoop.execute {
                    let (handler, context) = loopBound.value
                    if handler.state == .heads { handler.readHeads(context) }
                }
            }
        }
        context.write(data, promise: promise)
    }

    // MARK: Refusing

    /// Answers `status` with `message`, shuts the output, discards what follows and closes
    /// after `lingerAfterRefusal`.
    private func refuse(_ context: ChannelHandlerContext, _ status: Int, _ reason: String, _ message: String, extra: String = "") {
        guard state != .refused else { return }
        state = .refused
        pending.clear()
        headTimer?.cancel()
        headTimer = nil
        let body = message + "\n"
        let head =
            "HTTP/1.1 \(status) \(reason)\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: \(body.utf8.count)\r\n"
            + "Connection: close\r\nX-Content-Type-Options: nosniff\r\nCache-Control: no-store\r\n\(extra)\r\n"
        var buffer = context.channel.allocator.buffer(capacity: head.utf8.count + body.utf8.count)
        buffer.writeString(head + body)
        logger.debug("refused a request with \(status): \(message)")
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        context.writeAndFlush(wrapOutboundOut(.byteBuffer(buffer))).whenComplete { _ in
            let (_, context) = loopBound.value
            context.close(mode: .output, promise: nil)
        }
        lingerTimer = context.eventLoop.scheduleTask(in: .milliseconds(Int64(policy.limits.lingerAfterRefusal * 1000))) {
            let (handler, context) = loopBound.value
            handler.lingerTimer = nil
            context.close(promise: nil)
        }
    }

    static func seconds(_ value: Double) -> String {
        value == value.rounded() ? "\(Int(value)) s" : "\(value) s"
    }
}

/// Finds where a request head ends, looking at each byte once, and what its bytes so far already
/// call for: not HTTP (TLS), an unknown method, a request line or a head too long, too many fields.
///
/// Threading: a value type.
struct HTTPHeadScanner {
    enum Outcome {
        case needMore
        case complete(Int)
        case refuse(HTTPHead.Refusal)
    }

    /// Bytes of the head looked at so far.
    private var scanned = 0
    private var lineFeeds = 0
    private var requestLineEnded = false
    private var methodChecked = false
    private var method: [UInt8] = []
    private var previous: UInt8 = 0
    private var beforePrevious: UInt8 = 0

    /// Whether no byte of this head was looked at yet.
    var isAtStart: Bool { scanned == 0 }

    /// Looks at the bytes of `head` (the pending head, from its first byte) not seen before.
    mutating func feed(_ head: ByteBufferView, limits: HTTPServerLimits) -> Outcome {
        if scanned == 0, head.first == 0x16 {
            return .refuse(.init(status: 400, reason: "Bad Request", message: "this port speaks plain HTTP, not TLS: use http://, not https://"))
        }
        var index = head.index(head.startIndex, offsetBy: scanned)
        while index < head.endIndex {
            let byte = head[index]
            index = head.index(after: index)
            scanned += 1
            if !methodChecked {
                if byte == 0x20 {
                    methodChecked = true
                    let name = String(decoding: method, as: UTF8.self)
                    if name != "GET" && name != "HEAD" && !HTTPHead.otherMethods.contains(name) {
                        return .refuse(.init(status: 501, reason: "Not Implemented", message: "the method \(name) is not one this server knows; it serves GET and HEAD"))
                    }
                } else if method.count >= 32 || !HTTPHead.isTokenByte(byte) {
                    return .refuse(.init(status: 400, reason: "Bad Request", message: "this is not an HTTP request"))
                } else {
                    method.append(byte)
                }
            }
            if byte == 0x0A {
                lineFeeds += 1
                if !requestLineEnded { requestLineEnded = true }
                if previous == 0x0A || (previous == 0x0D && beforePrevious == 0x0A) { return .complete(scanned) }
                if lineFeeds - 1 > limits.maximumHeaderCount {
                    return .refuse(.init(
                        status: 431, reason: "Request Header Fields Too Large",
                        message: "the request has more than \(limits.maximumHeaderCount) header fields"))
                }
            }
            if !requestLineEnded && scanned > limits.maximumRequestLineBytes {
                return .refuse(.init(status: 414, reason: "URI Too Long", message: "the request line is longer than \(limits.maximumRequestLineBytes) bytes"))
            }
            if scanned > limits.maximumHeadBytes {
                return .refuse(.init(
                    status: 431, reason: "Request Header Fields Too Large",
                    message: "the request's head is larger than \(limits.maximumHeadBytes) bytes"))
            }
            beforePrevious = previous
            previous = byte
        }
        return .needMore
    }
}

/// One request head as the guard reads it: the request line and the header fields it checks.
///
/// Threading: a value type.
struct HTTPHead {
    struct Refusal {
        var status: Int
        var reason: String
        var message: String
        var extra = ""
    }

    /// Methods HTTP defines that cvcam's servers do not serve (405, not 501).
    static let otherMethods: Set<String> = ["POST", "PUT", "DELETE", "OPTIONS", "PATCH", "TRACE", "CONNECT", "PRI"]

    var method = ""
    var target = ""
    var version = ""
    var fields: [(name: String, value: String)] = []
    var malformed: String?

    /// RFC 9110's `tchar`.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        default: "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    init<Bytes: Collection>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        var lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: false).map { line -> [UInt8] in
            var line = Array(line)
            if line.last == 0x0D { line.removeLast() }
            return line
        }
        while lines.last?.isEmpty == true { lines.removeLast() }
        guard let requestLine = lines.first else {
            malformed = "the request is empty"
            return
        }
        let parts = requestLine.split(separator: 0x20, omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[1].isEmpty, requestLine.allSatisfy({ $0 > 0x20 && $0 < 0x7F || $0 == 0x20 }) else {
            malformed = "the request line is not METHOD TARGET HTTP/VERSION"
            return
        }
        method = String(decoding: parts[0], as: UTF8.self)
        target = String(decoding: parts[1], as: UTF8.self)
        version = String(decoding: parts[2], as: UTF8.self)
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > 0,
                line[..<colon].allSatisfy(Self.isTokenByte),
                line[(colon + 1)...].allSatisfy({ $0 >= 0x20 && $0 != 0x7F || $0 == 0x09 })
            else {
                malformed = "a header field is malformed"
                return
            }
            let value = String(decoding: line[(colon + 1)...], as: UTF8.self).trimmingCharacters(in: .whitespaces)
            fields.append((String(decoding: line[..<colon], as: UTF8.self).lowercased(), value))
        }
    }

    func values(_ name: String) -> [String] { fields.filter { $0.name == name }.map(\.value) }

    /// Whether the request asks to switch protocols (a WebSocket).
    var asksForUpgrade: Bool { !values("upgrade").isEmpty }

    /// Why the whole head is refused, or nil when it is passed on.
    func refusal(policy: HTTPRequestPolicy) -> Refusal? {
        if let malformed { return Refusal(status: 400, reason: "Bad Request", message: malformed) }
        guard version == "HTTP/1.1" || version == "HTTP/1.0" else {
            if version.hasPrefix("HTTP/") {
                return Refusal(status: 505, reason: "HTTP Version Not Supported", message: "this server speaks HTTP/1.1")
            }
            return Refusal(status: 400, reason: "Bad Request", message: "the request line is not METHOD TARGET HTTP/VERSION")
        }
        if Self.otherMethods.contains(method) {
            return Refusal(
                status: 405, reason: "Method Not Allowed", message: "this server serves GET and HEAD only", extra: "Allow: GET, HEAD\r\n")
        }
        if values("transfer-encoding").count > 0
            || values("content-length").contains(where: { $0 != "0" })
        {
            let lengths = values("content-length")
            if lengths.contains(where: { Int($0) == nil }) {
                return Refusal(status: 400, reason: "Bad Request", message: "Content-Length is not a number")
            }
            return Refusal(status: 413, reason: "Content Too Large", message: "this server takes no request bodies")
        }
        let hosts = values("host")
        if hosts.count > 1 { return Refusal(status: 400, reason: "Bad Request", message: "the request has more than one Host header") }
        if hosts.isEmpty && version == "HTTP/1.1" {
            return Refusal(status: 400, reason: "Bad Request", message: "an HTTP/1.1 request needs a Host header")
        }
        var named = hosts
        // An absolute target (`GET http://host/path`) names a host too.
        if let schemeEnd = target.range(of: "://") {
            let rest = target[schemeEnd.upperBound...]
            named.append(String(rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }))
        } else if !target.hasPrefix("/") {
            return Refusal(status: 400, reason: "Bad Request", message: "the request target must be a path")
        }
        for host in named where !policy.hosts.allows(host) {
            return Refusal(
                status: 421, reason: "Misdirected Request",
                message: "this server does not answer to that host name (a page on another site may be reaching it through DNS rebinding); open it as http://127.0.0.1:PORT/ or http://localhost:PORT/, or add the name with \(policy.allowHostHint)")
        }
        return nil
    }
}
