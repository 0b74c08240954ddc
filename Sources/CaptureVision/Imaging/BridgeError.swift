import CVBridge

extension cvb_error {
    /// The shim's message (OpenCV's exception text, ZBar's or zxing-cpp's error, or errno text)
    /// as a Swift string.
    package var text: String {
        withUnsafeBytes(of: message) { raw in
            String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
    }
}

extension CaptureError {
    /// The one mapping from a failed CVBridge call to a typed error: `what` (the operation, in
    /// the caller's words) followed by the library's message, and the library's status code.
    /// A call whose module (`cvb_module_load`) could not be loaded is `moduleUnavailable`
    /// whatever `code` the caller expected, and says so instead of `what`: the input is not at
    /// fault.
    package init(_ code: Code, _ what: String, bridge err: cvb_error, path: String? = nil) {
        let detail = err.text
        if err.code == Int32(CVB_ERROR_MODULE_UNAVAILABLE) {
            self.init(
                .moduleUnavailable,
                "\(detail). This build (the shipped layout, CVCAM_LEAN_MODULES) loads it on first use from "
                    + "beside the program or from ../lib/cvcam: reinstall cvcam with its lib/cvcam folder "
                    + "(Tools/install or the .deb), or use a plain `swift build`, which links it in",
                path: path, libraryCode: err.code)
            return
        }
        self.init(
            code, detail.isEmpty ? what : "\(what): \(detail)", path: path,
            libraryCode: err.code != 0 ? err.code : nil)
    }
}

/// Runs one CVBridge call that returns a status (0 = success) and fills a `cvb_error`, and
/// turns a failure into `CaptureError(code, what, bridge:)`.
package func bridgeCall(
    _ code: CaptureError.Code, _ what: @autoclosure () -> String, path: String? = nil,
    _ call: (inout cvb_error) -> Int32
) throws(CaptureError) {
    var err = cvb_error()
    guard call(&err) == 0 else { throw CaptureError(code, what(), bridge: err, path: path) }
}
