import Foundation

/// Caps glibc's malloc arenas for the long-running servers (`serve`, `preview`).
///
/// glibc gives each thread that meets contention an arena of its own, up to eight per core;
/// a server whose requests hop between event-loop, dispatch and capture threads then keeps
/// freed memory scattered over many arenas, and its resident size creeps up although nothing
/// is kept. Two arenas keep it flat (see the README's Performance section). A
/// `MALLOC_ARENA_MAX` in the environment is the operator's choice and is left alone.
///
/// Wraps glibc's `mallopt(M_ARENA_MAX, n)`, looked up with `dlsym` because Swift's Glibc module
/// does not import `<malloc.h>`. Call once, early, before the servers start their threads.
package enum MallocArenas {
    /// glibc's `M_ARENA_MAX` (malloc.h).
    private static let arenaMaxParameter: Int32 = -8

    /// Returns whether the cap was applied (false: set by the environment, or not glibc).
    @discardableResult
    package static func limit(to count: Int32 = 2, environment: [String: String] = ProcessInfo.processInfo.environment) -> Bool {
        guard environment["MALLOC_ARENA_MAX"] == nil, let symbol = dlsym(nil, "mallopt") else { return false }
        typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
        return unsafeBitCast(symbol, to: Mallopt.self)(arenaMaxParameter, count) == 1
    }
}
