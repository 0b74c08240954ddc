/// Lets tests in different test targets take turns with one resource of the process. Test
/// targets run in one process and their suites in parallel; a `.serialized` suite orders only
/// its own tests. The emulated V4L2 camera, like a real one, has one state per process and
/// refuses a second streamer (EBUSY), so every suite that streams from it holds `emulatedCamera`.
///
/// Threading: thread-safe; waiters are resumed in arrival order, without blocking a thread.
public actor ExclusiveAccess {
    /// The emulated V4L2 camera (Sources/V4L2Emulator).
    public static let emulatedCamera = ExclusiveAccess()

    private var isHeld = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    /// A lock nobody holds.
    public init() {}

    /// Runs `body` while holding the resource, waiting for the current holder first.
    public func run(_ body: @Sendable () async throws -> Void) async throws {
        await acquire()
        do {
            try await body()
        } catch {
            release()
            throw error
        }
        release()
    }

    private func acquire() async {
        guard isHeld else {
            isHeld = true
            return
        }
        // Ownership passes directly from `release` to the first waiter.
        await withCheckedContinuation { waiting.append($0) }
    }

    private func release() {
        if waiting.isEmpty {
            isHeld = false
        } else {
            waiting.removeFirst().resume()
        }
    }
}
