import ArgumentParser

// Linked into the fuzzed CLI by Tools/fuzz instead of Sources/cvcam/Serve and Preview: the
// daemons pull in SwiftNIO, Hummingbird and libmosquitto, which the argument fuzzer does not
// need (their options are parsed by the same ArgumentParser, their files by ServeConfigTests).
extension CVCam {
    static let daemonCommands: [any ParsableCommand.Type] = []
}
