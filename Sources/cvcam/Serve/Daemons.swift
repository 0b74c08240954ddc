import ArgumentParser

extension CVCam {
    /// The subcommands that run servers (MQTT, HTTP). The fuzzed build of the CLI
    /// (Tools/FuzzTargets) has its own, empty list: it links no server packages.
    static let daemonCommands: [any ParsableCommand.Type] = [Serve.self, Preview.self]
}
