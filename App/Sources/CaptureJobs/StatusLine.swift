import Foundation

/// A live status line on stderr (fps, drops, CPU, what was found, progress with ETA for files),
/// shown only when stderr is a terminal.
///
/// Threading: thread-safe.
package final class StatusLine: @unchecked Sendable {
    // @unchecked: all state is guarded by `lock`.
    private let lock = NSLock()
    private var visible = false
    private var timer: DispatchSourceTimer?

    /// A status line, or nil when stderr is not a terminal or the user asked for quiet.
    package static func makeIfTerminal(quiet: Bool) -> StatusLine? {
        (!quiet && isatty(STDERR_FILENO) == 1) ? StatusLine() : nil
    }

    /// Redraws every half second with the text `render` returns.
    package func start(render: @escaping @Sendable () -> String) {
        let t = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "cvcam.status"))
        t.schedule(deadline: .now() + 0.5, repeating: 0.5)
        t.setEventHandler { [weak self] in self?.draw(render()) }
        t.resume()
        lock.withLock { timer = t }
    }

    package func stop() {
        lock.withLock {
            timer?.cancel()
            timer = nil
        }
        clear()
    }

    private func draw(_ text: String) {
        lock.withLock {
            FileHandle.standardError.write(Data(("\r\u{1B}[2K" + TerminalText.escaped(text)).utf8))
            visible = true
        }
    }

    /// Erases the line (before other output is printed).
    package func clear() {
        lock.withLock {
            if visible { FileHandle.standardError.write(Data("\r\u{1B}[2K".utf8)) }
            visible = false
        }
    }

    /// "[#####.....] 50% ETA 0:04" for `done` of `total`, given the rate so far.
    package static func progress(done: Int, total: Int, perSecond: Double) -> String {
        guard total > 0 else { return "" }
        let fraction = min(1, Double(done) / Double(total))
        let width = 20
        let filled = Int(fraction * Double(width))
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
        // Capped below 100 hours: a rate near zero must not overflow the conversion to Int.
        let remaining = perSecond > 0 ? min(max(0, Double(total - done) / perSecond), 359_999) : 0
        return String(format: "[%@] %3.0f%% ETA %d:%02d", bar, fraction * 100, Int(remaining) / 60, Int(remaining) % 60)
    }
}
