import CaptureJobs
import Foundation

/// The preview's access token: the rule it must meet (it travels in URLs, cookies and headers)
/// and how a token file is read. Shared by `cvcam preview` and a `cvcam serve` preview section.
package enum PreviewToken {
    /// Why `token` cannot be a preview token (it travels in URLs, cookies and headers), or nil.
    package static func problem(_ token: String) -> String? {
        let allowed = token.unicodeScalars.allSatisfy {
            $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "-._~".unicodeScalars.contains($0))
        }
        return (8...256).contains(token.count) && allowed
            ? nil : "must be 8 to 256 characters, letters, digits, - . _ or ~ (e.g. from `openssl rand -hex 16`)"
    }

    /// The first line of a token file, trimmed.
    package static func firstLine(_ data: Data) -> String {
        String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline).first.map {
            $0.trimmingCharacters(in: .whitespaces)
        } ?? ""
    }
}
