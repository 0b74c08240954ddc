import Foundation
import Synchronization

/// Keeps secrets out of text: the one function every message, log line, event and page that may
/// hold a URL or a library's message goes through before it is shown or published.
///
/// `redact(_:)` replaces, with `***`:
/// - in every URL of any scheme (`rtsp://`, `http://`, `mqtt://`, `ws://`, `rtmp://`, …), what
///   follows the user name in its user information, up to the URL's last `@` (a password may hold
///   `@`, `:` or `/`, raw or percent-encoded): `rtsp://admin:***@cam/live`;
/// - the value of every query or fragment parameter whose name looks like a secret (`password`,
///   `pwd`, `token`, `auth`, `key`, `secret`, `sig`, `cred`, compared lowercased, as parts of the
///   name: `api_key`, `access_token`);
/// - every secret the process was given (`remember(_:)`: stream and broker passwords, preview
///   tokens), as written and percent-encoded, wherever it stands. Secrets shorter than
///   `minimumBareSecretLength` are only masked inside URLs, so that a two-letter password does
///   not blank out ordinary words.
///
/// A text that is a URL alone (it begins with `scheme://` and has no line break) is one URL,
/// spaces included; in other text a URL ends at white space, a quote, a backtick or `<`/`>`.
/// A user name alone (`https://user@host`) is shown; a path holding `:` and `@`
/// (`http://cam:80/a@b`) is masked as if it were credentials: safe rather than exact.
///
/// Threading: thread-safe; the remembered secrets are process-wide, behind a lock.
public enum Redaction {
    /// What a secret is replaced with.
    public static let mask = "***"
    /// Remembered secrets at least this long are masked anywhere in a text.
    public static let minimumBareSecretLength = 4
    /// Parts of query parameter names whose values are secrets (compared lowercased).
    static let secretNameParts = ["pass", "pwd", "token", "secret", "auth", "key", "sig", "cred"]

    private static let secrets = Mutex<[String]>([])

    /// Remembers `secret`, so every later `redact(_:)` masks it (and its percent-encoded forms).
    /// Call it as soon as a password or token is read, before anything can print it.
    public static func remember(_ secret: String) {
        guard !secret.isEmpty else { return }
        var forms: Set<String> = [secret]
        for allowed in [CharacterSet.urlPasswordAllowed, .urlQueryAllowed, .alphanumerics] {
            if let encoded = secret.addingPercentEncoding(withAllowedCharacters: allowed) { forms.insert(encoded) }
        }
        if let decoded = secret.removingPercentEncoding { forms.insert(decoded) }
        secrets.withLock { list in
            for form in forms where !list.contains(form) { list.append(form) }
            // Longest first, so a secret that contains another is masked whole.
            list.sort { $0.count > $1.count }
        }
    }

    /// Remembers the password and the secret query values of `url`, even when it does not parse
    /// (its user information then runs to the last `@`): for inputs and addresses from outside.
    public static func remember(secretsIn url: String) {
        guard let separator = url.range(of: "://") else { return }
        let rest = url[separator.upperBound...]
        if let at = rest.lastIndex(of: "@"), let colon = rest[..<at].firstIndex(of: ":") {
            remember(String(rest[rest.index(after: colon)..<at]))
        }
        guard let question = rest.firstIndex(where: { $0 == "?" || $0 == "#" }) else { return }
        for pair in rest[rest.index(after: question)...].split(whereSeparator: { "&;#".contains($0) }) {
            guard let equals = pair.firstIndex(of: "="), isSecretName(pair[..<equals]) else { continue }
            remember(String(pair[pair.index(after: equals)...]))
        }
    }

    /// `text` with credentials in URLs, secret query values and remembered secrets replaced by `mask`.
    public static func redact(_ text: String) -> String {
        var out = text.contains("://") ? redactingURLs(text) : text
        let remembered = secrets.withLock { $0 }
        for secret in remembered where secret.count >= minimumBareSecretLength && out.contains(secret) {
            out = out.replacingOccurrences(of: secret, with: mask)
        }
        return out
    }

    // MARK: URLs

    private static func redactingURLs(_ text: String) -> String {
        let scalars = Array(text.unicodeScalars)
        if isOneURL(scalars) { return redactedURL(scalars[...]) }
        var out = String.UnicodeScalarView()
        var i = 0
        while i < scalars.count {
            guard isSchemeStart(scalars[i]), i == 0 || !isSchemeCharacter(scalars[i - 1]) else {
                out.append(scalars[i])
                i += 1
                continue
            }
            let word = schemeEnd(scalars, from: i)
            guard hasSlashes(scalars, at: word) else {
                out.append(contentsOf: scalars[i..<word])
                i = word
                continue
            }
            var end = word + 3
            while end < scalars.count, !endsURL(scalars[end]) { end += 1 }
            out.append(contentsOf: redactedURL(scalars[i..<end]).unicodeScalars)
            i = end
        }
        return String(out)
    }

    /// Whether the whole text is one URL: it begins with `scheme://`, has no line break, and
    /// nothing after its last `@` is white space (so spaces before it are in a password).
    private static func isOneURL(_ s: [Unicode.Scalar]) -> Bool {
        guard let first = s.first, isSchemeStart(first), hasSlashes(s, at: schemeEnd(s, from: 0)),
            !s.contains(where: { $0 == "\n" || $0 == "\r" })
        else { return false }
        guard let at = s.lastIndex(of: "@") else { return !s.contains(where: endsURL) }
        return !s[at...].contains(where: endsURL)
    }

    /// The index just past the run of scheme characters that starts at `i`.
    private static func schemeEnd(_ s: [Unicode.Scalar], from i: Int) -> Int {
        var j = i
        while j < s.count, isSchemeCharacter(s[j]) { j += 1 }
        return j
    }

    /// Whether `://` stands at `i`.
    private static func hasSlashes(_ s: [Unicode.Scalar], at i: Int) -> Bool {
        i + 2 < s.count && s[i] == ":" && s[i + 1] == "/" && s[i + 2] == "/"
    }

    private static func isSchemeStart(_ c: Unicode.Scalar) -> Bool {
        ("a"..."z").contains(c) || ("A"..."Z").contains(c)
    }

    private static func isSchemeCharacter(_ c: Unicode.Scalar) -> Bool {
        isSchemeStart(c) || ("0"..."9").contains(c) || c == "+" || c == "-" || c == "."
    }

    private static func endsURL(_ c: Unicode.Scalar) -> Bool {
        c.properties.isWhitespace || c.value < 0x20 || c.value == 0x7F || "\"'`<>".unicodeScalars.contains(c)
    }

    /// One URL (`scheme://…`) with its password and secret parameter values masked.
    private static func redactedURL(_ url: ArraySlice<Unicode.Scalar>) -> String {
        let text = String(String.UnicodeScalarView(url))
        guard let separator = text.range(of: "://") else { return text }
        let head = text[..<separator.upperBound]
        var rest = text[separator.upperBound...]
        var shown = String(head)
        if let at = rest.lastIndex(of: "@") {
            let userinfo = rest[..<at]
            if let colon = userinfo.firstIndex(of: ":") {
                shown += userinfo[..<colon] + ":" + mask
            } else {
                shown += userinfo
            }
            rest = rest[at...]
        }
        return shown + maskingSecretParameters(rest)
    }

    /// `rest` (authority onwards) with secret values in its query and fragment masked.
    private static func maskingSecretParameters(_ rest: Substring) -> String {
        guard let question = rest.firstIndex(where: { $0 == "?" || $0 == "#" }) else { return String(rest) }
        var out = String(rest[..<question])
        var part = rest[question...]
        while let first = part.first {
            out.append(first)
            part = part.dropFirst()
            let end = part.firstIndex(where: { $0 == "&" || $0 == ";" || $0 == "#" }) ?? part.endIndex
            let pair = part[..<end]
            if let equals = pair.firstIndex(of: "="), isSecretName(pair[..<equals]) {
                out += pair[...equals] + mask
            } else {
                out += pair
            }
            part = part[end...]
        }
        return out
    }

    static func isSecretName(_ name: Substring) -> Bool {
        let lowered = (String(name).removingPercentEncoding ?? String(name)).lowercased()
        return secretNameParts.contains { lowered.contains($0) }
    }
}
