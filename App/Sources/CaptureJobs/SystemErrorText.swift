import CaptureKit
import Foundation

/// Why a system or Foundation call failed, in cvcam's words: the one way an error from
/// Foundation (`CocoaError`, `NSError`, `POSIXError`) reaches a user.
///
/// Foundation's own descriptions are not fit to show: on Linux they read "The operation could
/// not be completed. (NSCocoaErrorDomain error 512.)", or a guess made for a Mac ("You don't
/// have permission…" for a FIFO read as root). Here the errno a Foundation error carries (its
/// own code for `POSIXError`, the underlying error for `CocoaError` and `NSError`) becomes
/// errno's text (`strerror`, "No such file or directory"); a Foundation code with no errno
/// becomes a phrase of ours. The caller says what failed and names the file or address:
/// `SystemErrorText.message("cannot read the configuration file \(path)", error)`. Where
/// Foundation loses errno (`FileManager.createDirectory` on Linux: "error 512"), call the
/// system directly instead (`LocalFiles`).
///
/// Threading: pure functions; thread-safe.
package enum SystemErrorText {
    /// `what` (what failed, naming the file, folder or address), a colon, and `reason(for:)`.
    package static func message(_ what: String, _ error: any Error) -> String {
        "\(what): \(reason(for: error))"
    }

    /// errno's text for `code` (`strerror`), e.g. "Permission denied".
    package static func reason(errno code: Int32) -> String {
        String(cString: strerror(code))
    }

    /// Why `error` happened, without Foundation's wording: errno's text when the error carries
    /// an errno, our phrase for a Foundation file error without one, cvcam's own message for
    /// cvcam's errors.
    package static func reason(for error: any Error) -> String {
        if let errno = errno(of: error) { return reason(errno: errno) }
        switch error {
        case let error as CaptureError: return error.message
        case let error as CLIError: return error.description
        case let error as CocoaError: return phrase(for: error.code)
        default: break
        }
        // Swift's own errors print their case; Foundation's other errors their domain and code,
        // which is all there is to say.
        let ns = error as NSError
        return ns.domain == NSCocoaErrorDomain ? phrase(for: CocoaError.Code(rawValue: ns.code)) : "\(error)"
    }

    /// The errno `error` carries: a `POSIXError`'s code, or the POSIX error under a Foundation
    /// error (`NSUnderlyingErrorKey`), followed down a few levels.
    package static func errno(of error: any Error) -> Int32? {
        if let posix = error as? POSIXError { return posix.code.rawValue }
        var current: NSError? = error as NSError
        for _ in 0..<4 {
            guard let ns = current else { return nil }
            if ns.domain == NSPOSIXErrorDomain, ns.code > 0 { return Int32(clamping: ns.code) }
            current = ns.userInfo[NSUnderlyingErrorKey] as? NSError
        }
        return nil
    }

    /// Our words for a Foundation file error that carries no errno.
    private static func phrase(for code: CocoaError.Code) -> String {
        switch code {
        case .fileNoSuchFile, .fileReadNoSuchFile: reason(errno: ENOENT)
        case .fileReadNoPermission, .fileWriteNoPermission: reason(errno: EACCES)
        case .fileWriteOutOfSpace: reason(errno: ENOSPC)
        case .fileWriteVolumeReadOnly: reason(errno: EROFS)
        case .fileWriteFileExists: reason(errno: EEXIST)
        case .fileReadTooLarge: reason(errno: EFBIG)
        case .fileReadInapplicableStringEncoding, .fileWriteInapplicableStringEncoding, .fileReadCorruptFile:
            "the text is not valid UTF-8"
        case .fileReadInvalidFileName, .fileWriteInvalidFileName: "the name is not a valid file name"
        case .fileLocking: "the file is locked"
        case .fileReadUnknown: "it could not be read, and the system gave no reason"
        case .fileWriteUnknown: "it could not be written, and the system gave no reason"
        default: "the system gave no reason"
        }
    }
}
