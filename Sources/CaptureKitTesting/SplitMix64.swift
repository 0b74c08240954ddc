/// A small, fast, seedable random number generator (SplitMix64), so generated corpora and
/// property tests are identical on every machine and every run.
///
/// Threading: a value type; each copy is independent.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// A generator whose sequence is fixed by `seed`.
    public init(seed: UInt64) { state = seed }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in 0 ..< n (0 when n ≤ 1).
    public mutating func int(_ n: Int) -> Int { Int(next() % UInt64(max(n, 1))) }

    /// A number in lo ..< hi.
    public mutating func double(_ lo: Double, _ hi: Double) -> Double {
        lo + (hi - lo) * Double(next() >> 11) / Double(1 << 53)
    }
}
