import Foundation

extension CaptureError.Code {
    /// A network camera's address that cvcam cannot use (not rtsp, rtsps, http or https; no host).
    public static let invalidStreamURL = CaptureError.Code(rawValue: "invalidStreamURL")
    /// A network camera could not be reached or opened within the connect timeout (refused,
    /// timed out, wrong credentials, not a video stream).
    public static let streamUnreachable = CaptureError.Code(rawValue: "streamUnreachable")
}

/// A network camera's address (`rtsp://`, `rtsps://`, `http://`, `https://` for MJPEG over
/// HTTP), with its credentials kept out of everything that is shown.
///
/// Credentials come from the URL's user info (`rtsp://user:pass@host/…`); a part the URL lacks
/// is taken from `user`/`password` (the CLI passes `CVCAM_STREAM_USER` and
/// `CVCAM_STREAM_PASSWORD`), so a password need not appear in a process list. What the URL
/// says wins. `redacted` is the URL through `Redaction.redact` (password and the values of
/// query parameters that look like secrets, such as `password=` or `token=`, as `***`); only
/// `connectionString`, which goes to FFmpeg, carries them. Parsing a URL remembers its password
/// and secret values with `Redaction.remember`, so no later message can show them.
///
/// Threading: a value type; use it anywhere.
public struct NetworkStreamURL: Sendable, Equatable, CustomStringConvertible {
    /// Schemes cvcam opens as network cameras.
    public static let schemes: Set<String> = ["rtsp", "rtsps", "http", "https"]

    /// The scheme, lowercased ("rtsp", "http", …).
    public let scheme: String
    /// The host name or address.
    public let host: String
    /// The user name, if any (from the URL, else the one passed in).
    public let user: String?
    /// The URL FFmpeg is given: with the credentials. Never print it.
    public let connectionString: String
    /// The URL as it may be shown: password and secret query values replaced by `***`.
    public let redacted: String
    private let password: String?

    /// Whether `text` names a network camera (its scheme is one of `schemes`), whatever else it says.
    public static func isNetworkStream(_ text: String) -> Bool {
        guard let colon = text.range(of: "://") else { return false }
        return schemes.contains(text[..<colon.lowerBound].lowercased())
    }

    /// Parses `text`; `user` and `password` fill in what its user info lacks.
    ///
    /// - Throws: `.invalidStreamURL` (its message redacted) when the scheme is not one of
    ///   `schemes`, there is no host, or it is not a URL.
    public init(_ text: String, user: String? = nil, password: String? = nil) throws(CaptureError) {
        // Remembered before anything can fail: a refused address is quoted in its error.
        Redaction.remember(secretsIn: text)
        if let password { Redaction.remember(password) }
        guard var components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
            Self.schemes.contains(scheme)
        else {
            throw CaptureError(
                .invalidStreamURL,
                "\(Redaction.redact(text)) is not a network camera address: use rtsp://, rtsps://, http:// or https:// (MJPEG), e.g. rtsp://camera.local:554/stream")
        }
        guard let host = components.host, !host.isEmpty else {
            throw CaptureError(
                .invalidStreamURL, "\(Redaction.redact(text)) names no host: e.g. \(scheme)://192.168.1.20/stream")
        }
        if components.user == nil || components.user == "", let user, !user.isEmpty { components.user = user }
        if components.password == nil, let password, !password.isEmpty, components.user != nil {
            components.password = password
        }
        self.scheme = scheme
        self.host = host
        self.user = components.user
        self.password = components.password
        connectionString = components.string ?? text
        redacted = Redaction.redact(connectionString)
    }

    public var description: String { redacted }

    /// `text` with every form of this URL and of its password replaced by the redacted form or
    /// `***`: for messages from FFmpeg or OpenCV, which may quote the URL they were given.
    public func redact(_ text: String) -> String {
        var out = text.replacingOccurrences(of: connectionString, with: redacted)
        if let password, !password.isEmpty, let user {
            // A password too short to mask alone is still masked where it follows its user.
            let encoded = password.addingPercentEncoding(withAllowedCharacters: .urlPasswordAllowed) ?? password
            for secret in Set([password, encoded]) {
                out = out.replacingOccurrences(of: "\(user):\(secret)@", with: "\(user):\(Redaction.mask)@")
            }
        }
        return Redaction.redact(out)
    }
}

/// How long a network camera may take: to connect (open and learn the stream's format), and
/// to deliver the next frame before the stream counts as dropped. They become OpenCV's
/// `CAP_PROP_OPEN_TIMEOUT_MSEC` and `CAP_PROP_READ_TIMEOUT_MSEC` (see `NetworkStreamReader`).
///
/// Threading: a value type; use it anywhere.
public struct NetworkStreamTimeouts: Sendable, Equatable {
    /// Seconds to connect (`CAP_PROP_OPEN_TIMEOUT_MSEC`).
    public var connect: Double
    /// Seconds without a frame before the stream counts as dropped (`CAP_PROP_READ_TIMEOUT_MSEC`).
    public var read: Double

    /// Creates timeouts; the defaults suit a camera on the local network.
    public init(connect: Double = 10, read: Double = 5) {
        self.connect = connect
        self.read = read
    }

    var connectMilliseconds: Int32 { Self.milliseconds(connect) }
    var readMilliseconds: Int32 { Self.milliseconds(read) }
    private static func milliseconds(_ seconds: Double) -> Int32 {
        Int32(min(max(seconds * 1000, 1), Double(Int32.max)).rounded())
    }
}

/// When a dropped network camera is tried again: exponential backoff, capped, without jitter.
///
/// The first attempt comes `initialDelay` after the drop (a restarted camera is usually back
/// within seconds); each failure doubles the wait up to `maximumDelay`, so a camera that is gone
/// for hours costs one attempt per `maximumDelay`. No jitter: each cvcam talks to its own
/// camera, so there is no crowd of clients to spread out, and a fixed schedule is predictable
/// for an operator reading the log.
///
/// Threading: a value type; use it anywhere.
public struct NetworkStreamBackoff: Sendable, Equatable {
    /// Seconds from the drop to the first attempt.
    public var initialDelay: Double
    /// Factor the wait grows by after each failed attempt.
    public var multiplier: Double
    /// The longest wait between attempts.
    public var maximumDelay: Double

    /// Creates a schedule: by default 0.5 s, 1 s, 2 s, … up to 30 s.
    public init(initialDelay: Double = 0.5, multiplier: Double = 2, maximumDelay: Double = 30) {
        self.initialDelay = initialDelay
        self.multiplier = multiplier
        self.maximumDelay = maximumDelay
    }

    /// Seconds to wait before the next attempt after `failures` failed attempts since the drop
    /// (0 = the first attempt).
    public func delay(afterFailures failures: Int) -> Double {
        // Capped before the power can overflow: 2^64 is far past any useful maximum.
        let grown = initialDelay * pow(multiplier, Double(min(max(failures, 0), 64)))
        return min(grown, maximumDelay)
    }
}
