// Arbitrary argument lines (one argument per input line) through the whole command tree's
// parsing and `validate()`, and the error text the tool would print. Nothing is run.
import ArgumentParser
import CVCamCommands
import FuzzSupport

runFuzzer { data, count in
    guard let start = data.map(UnsafeRawPointer.init) else { return 0 }
    let text = String(decoding: UnsafeRawBufferPointer(start: start, count: count), as: UTF8.self)
    let arguments = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    do {
        _ = try CVCam.parseAsRoot(arguments)
    } catch {
        _ = CVCam.fullMessage(for: error)
        _ = CVCam.exitCode(for: error)
    }
    return 0
}
