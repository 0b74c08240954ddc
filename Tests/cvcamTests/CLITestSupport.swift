import Foundation

/// Runs the built `cvcam` binary and captures its output.
enum CLI {
    static let packageRoot: URL = {
        var url = URL(fileURLWithPath: #filePath)
        while url.path != "/" {
            url.deleteLastPathComponent()
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) { return url }
        }
        fatalError("Package.swift not found above \(#filePath)")
    }()

    /// The cvcam binary built beside the test bundle.
    static let binary: URL = {
        let besideTests = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for dir in [besideTests, besideTests.deletingLastPathComponent(), packageRoot.appendingPathComponent(".build/debug")] {
            let candidate = dir.appendingPathComponent("cvcam")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        return packageRoot.appendingPathComponent(".build/debug/cvcam")
    }()

    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
        var lines: [String] { stdout.split(separator: "\n").map(String.init) }
    }

    /// A `cvcam arguments…` (or `executable arguments…`) process, not yet started, with this
    /// process's environment plus `environment`, stdout and stderr on pipes and stdin closed.
    static func process(
        _ arguments: [String], environment: [String: String] = [:], executable: URL? = nil
    ) -> (process: Process, out: Pipe, err: Pipe) {
        let process = Process()
        process.executableURL = executable ?? binary
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        return (process, out, err)
    }

    /// Runs `cvcam arguments…` (or `executable arguments…`) to completion, with `stdin` on its
    /// standard input (closed when nil).
    static func run(
        _ arguments: [String], environment: [String: String] = [:], executable: URL? = nil, stdin: Data? = nil
    ) throws -> Result {
        let (process, out, err) = Self.process(arguments, environment: environment, executable: executable)
        let input = Pipe()
        if stdin != nil { process.standardInput = input }
        try process.run()
        if let stdin {
            // Written from a thread of its own: a large image would fill the pipe before cvcam reads it.
            Thread {
                try? input.fileHandleForWriting.write(contentsOf: stdin)
                try? input.fileHandleForWriting.close()
            }.start()
        }
        // Read both pipes concurrently so a chatty process cannot block on a full pipe.
        nonisolated(unsafe) var errData = Data()
        let reader = Thread { errData = err.fileHandleForReading.readDataToEndOfFile() }
        reader.start()
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        while !reader.isFinished { Thread.sleep(forTimeInterval: 0.005) }
        return Result(
            status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
            stderr: String(decoding: errData, as: UTF8.self))
    }

    static func fixture(_ relative: String) -> String {
        packageRoot.appendingPathComponent("Tests/Fixtures/faces/\(relative)").path
    }
}
