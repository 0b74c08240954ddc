import Foundation

/// Runs the built `cvcam` binary and captures its output.
package enum CLI {
    /// The repository's root: the library package, whose Tests/Fixtures, Models and README the
    /// tests read (this test target lives in the App package below it).
    package static let packageRoot: URL = {
        var url = URL(fileURLWithPath: #filePath)
        while url.path != "/" {
            url.deleteLastPathComponent()
            let fm = FileManager.default
            if fm.fileExists(atPath: url.appendingPathComponent("Package.swift").path),
                fm.fileExists(atPath: url.appendingPathComponent("App/Package.swift").path)
            {
                return url
            }
        }
        fatalError("the repository's Package.swift not found above \(#filePath)")
    }()

    /// The App package (the tool, the daemon, the preview), where the cvcam binary is built.
    package static let appRoot = packageRoot.appendingPathComponent("App")

    /// The emulated V4L2 camera (libV4L2Emulator.so), which the library package builds: beside
    /// the cvcam binary when a build put it there, else in the root package's build folder
    /// (Tools/test builds the root package first).
    package static let emulatorLibrary: URL = {
        let name = "libV4L2Emulator.so"
        let beside = binary.deletingLastPathComponent().appendingPathComponent(name)
        if FileManager.default.fileExists(atPath: beside.path) { return beside }
        let configuration = binary.deletingLastPathComponent().lastPathComponent  // debug or release
        return packageRoot.appendingPathComponent(".build/\(configuration)/\(name)")
    }()

    /// The cvcam binary built beside the test bundle.
    package static let binary: URL = {
        let besideTests = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for dir in [besideTests, besideTests.deletingLastPathComponent(), appRoot.appendingPathComponent(".build/debug")] {
            let candidate = dir.appendingPathComponent("cvcam")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        return appRoot.appendingPathComponent(".build/debug/cvcam")
    }()

    package struct Result {
        package var status: Int32
        package var stdout: String
        package var stderr: String
        package var lines: [String] { stdout.split(separator: "\n").map(String.init) }

        /// Creates the value from each of its properties.
        package init(status: Int32, stdout: String, stderr: String) {
            self.status = status
            self.stdout = stdout
            self.stderr = stderr
        }
    }

    /// A `cvcam arguments…` (or `executable arguments…`) process, not yet started, with this
    /// process's environment plus `environment`, stdout and stderr on pipes and stdin closed.
    package static func process(
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
    package static func run(
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

    package static func fixture(_ relative: String) -> String {
        packageRoot.appendingPathComponent("Tests/Fixtures/faces/\(relative)").path
    }
}
