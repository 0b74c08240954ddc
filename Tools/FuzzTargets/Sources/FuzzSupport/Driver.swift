import Foundation

import CLibFuzzer

/// Runs libFuzzer with this process's arguments, calling `test` on each input; exits with its status.
/// `test` returns 0 (libFuzzer's contract) and fails by trapping.
public func runFuzzer(_ test: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> Never {
    var argc = CommandLine.argc
    var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
    exit(cfuzz_run(&argc, &argv, test))
}
