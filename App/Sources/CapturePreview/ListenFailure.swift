import CaptureJobs
import Foundation
import NIOCore

/// Why a server could not listen on its address, in cvcam's words: SwiftNIO's `IOError` reads
/// "bind(descriptor:ptr:bytes:): Address already in use (errno: 98)"; this says errno's text.
///
/// Threading: pure functions; thread-safe.
package enum ListenFailure {
    /// errno's text when `error` carries one (`IOError`, Foundation errors), else
    /// `SystemErrorText.reason(for:)`.
    package static func reason(_ error: any Error) -> String {
        if let io = error as? IOError { return SystemErrorText.reason(errno: io.errnoCode) }
        return SystemErrorText.reason(for: error)
    }

    /// "cannot serve <what> on <address>: <reason>; <advice>", with advice for the usual causes.
    package static func message(_ what: String, address: String, _ error: any Error, option: String) -> String {
        let errno = (error as? IOError)?.errnoCode ?? SystemErrorText.errno(of: error)
        let advice: String
        switch errno {
        case EADDRINUSE: advice = "another program (or another cvcam) listens there; choose another port in \(option)"
        case EACCES: advice = "ports below 1024 need privileges; choose a port from 1024 up in \(option)"
        case EADDRNOTAVAIL: advice = "that address is not one of this machine's; check \(option)"
        default: advice = "check \(option)"
        }
        return "cannot serve \(what) on \(address): \(reason(error)); \(advice)"
    }
}
