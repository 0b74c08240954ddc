import Foundation
import Synchronization

/// A cvcam child whose stdout is read line by line while it runs.
package final class RunningCLI: Sendable {
    private final class Captured: Sendable {
        package let lines = Mutex<[String]>([])
        package let stderrText = Mutex<String>("")
    }
    private let process: Process
    private let captured = Captured()

    package init(_ arguments: [String], environment: [String: String]) throws {
        let (process, out, err) = CLI.process(arguments, environment: environment)
        self.process = process
        try process.run()
        let captured = self.captured
        Thread {
            var pending = Data()
            while case let chunk = out.fileHandleForReading.availableData, !chunk.isEmpty {
                pending.append(chunk)
                while let newline = pending.firstIndex(of: 0x0A) {
                    let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                    pending.removeSubrange(pending.startIndex...newline)
                    captured.lines.withLock { $0.append(line) }
                }
            }
        }.start()
        Thread {
            let data = err.fileHandleForReading.readDataToEndOfFile()
            captured.stderrText.withLock { $0 = String(decoding: data, as: UTF8.self) }
        }.start()
    }

    package var output: [String] { captured.lines.withLock { $0 } }
    package var errorOutput: String { captured.stderrText.withLock { $0 } }

    /// The first line holding `text`, waiting up to `timeout` seconds for it.
    package func waitForLine(containing text: String, timeout: Double) -> String? {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while Date() < deadline {
            if let line = output.first(where: { $0.contains(text) }) { return line }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return nil
    }

    package func interrupt() { process.interrupt() }

    /// Waits for the exit (and the last lines); the exit status.
    package func wait() -> Int32 {
        process.waitUntilExit()
        Thread.sleep(forTimeInterval: 0.2)
        return process.terminationStatus
    }

    package func kill() { if process.isRunning { process.terminate() } }
}
