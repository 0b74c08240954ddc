/// Reed–Solomon codes over GF(2ᵐ) with the generator ∏ (x − αⁱ), i = 1…n (first root α¹), as
/// Aztec uses them (ISO/IEC 24778 §7.2.3): systematic encoding and error correction by
/// Berlekamp–Massey, a Chien search and Forney's formula. Codeword 0 is the highest-degree
/// coefficient.
///
/// Threading: value type of immutable tables; use from any thread.
struct ReedSolomon: Sendable {
    /// Bits per symbol (m).
    let bits: Int
    private let exp: [Int]
    private let log: [Int]

    /// The field GF(2^`bits`) built from the primitive `polynomial` (its bit m set: 0x13 is x⁴ + x + 1).
    init(bits: Int, polynomial: Int) {
        self.bits = bits
        let size = 1 << bits
        var e = [Int](repeating: 0, count: 2 * size)
        var l = [Int](repeating: 0, count: size)
        var v = 1
        for i in 0..<(size - 1) {
            e[i] = v
            e[i + size - 1] = v
            l[v] = i
            v <<= 1
            if v & size != 0 { v ^= polynomial }
        }
        exp = e
        log = l
    }

    /// Aztec's fields by codeword size (ISO/IEC 24778 table 3): 4 bits for the mode message,
    /// 6, 8, 10 or 12 for data by layer count.
    static let aztec4 = ReedSolomon(bits: 4, polynomial: 0x13)
    static let aztec6 = ReedSolomon(bits: 6, polynomial: 0x43)
    static let aztec8 = ReedSolomon(bits: 8, polynomial: 0x12D)
    static let aztec10 = ReedSolomon(bits: 10, polynomial: 0x409)
    static let aztec12 = ReedSolomon(bits: 12, polynomial: 0x1069)

    static func aztec(wordSize: Int) -> ReedSolomon? {
        switch wordSize {
        case 4: return aztec4
        case 6: return aztec6
        case 8: return aztec8
        case 10: return aztec10
        case 12: return aztec12
        default: return nil
        }
    }

    private var order: Int { (1 << bits) - 1 }

    func multiply(_ a: Int, _ b: Int) -> Int {
        a == 0 || b == 0 ? 0 : exp[log[a] + log[b]]
    }

    func divide(_ a: Int, _ b: Int) -> Int {
        precondition(b != 0, "division by zero in GF(2^\(bits))")
        return a == 0 ? 0 : exp[(log[a] + order - log[b]) % order]
    }

    /// αⁱ for any integer i.
    func power(_ i: Int) -> Int {
        exp[((i % order) + order) % order]
    }

    /// The `count` check words of `data`.
    func checkWords(_ data: [Int], count n: Int) -> [Int] {
        var g = [1]
        for i in 1...n {
            var next = [Int](repeating: 0, count: g.count + 1)
            for (j, c) in g.enumerated() {
                next[j] ^= c
                next[j + 1] ^= multiply(c, power(i))
            }
            g = next
        }
        var message = data + [Int](repeating: 0, count: n)
        for i in data.indices where message[i] != 0 {
            let c = message[i]
            for j in 1..<g.count { message[i + j] ^= multiply(g[j], c) }
        }
        return Array(message[data.count...])
    }

    /// Corrects `words` (data then `checkWords` check words) in place; false when they hold more
    /// errors than the code corrects (at most half its check words) or a word is out of the field.
    func correct(_ words: inout [Int], checkWords n: Int) -> Bool {
        let count = words.count
        guard n > 0, n < count, count <= order, words.allSatisfy({ $0 >= 0 && $0 <= order }) else { return false }
        // Syndromes Sⱼ = r(αʲ), j = 1…n.
        func syndromes(_ w: [Int]) -> [Int] {
            (1...n).map { j in
                var s = 0
                for v in w { s = multiply(s, power(j)) ^ v }
                return s
            }
        }
        let s = syndromes(words)
        if s.allSatisfy({ $0 == 0 }) { return true }
        // Berlekamp–Massey: the error locator Λ (Λ[0] = 1, ascending powers).
        var lambda = [1], previous = [1]
        var length = 0, shift = 1, lastDiscrepancy = 1
        for k in 0..<n {
            var d = s[k]
            for i in 1..<min(lambda.count, length + 1) where i <= k { d ^= multiply(lambda[i], s[k - i]) }
            if d == 0 {
                shift += 1
                continue
            }
            let scale = divide(d, lastDiscrepancy)
            var next = lambda
            if next.count < previous.count + shift { next += [Int](repeating: 0, count: previous.count + shift - next.count) }
            for (i, c) in previous.enumerated() { next[i + shift] ^= multiply(scale, c) }
            if 2 * length <= k {
                previous = lambda
                length = k + 1 - length
                lastDiscrepancy = d
                shift = 1
            } else {
                shift += 1
            }
            lambda = next
        }
        while lambda.count > 1 && lambda.last == 0 { lambda.removeLast() }
        guard length == lambda.count - 1, length >= 1, 2 * length <= n else { return false }
        // Chien search: position p (the coefficient of xᵖ, word count−1−p) is wrong when Λ(α⁻ᵖ) = 0.
        var positions: [Int] = []
        for p in 0..<count {
            let x = power(-p)
            var v = 0
            for c in lambda.reversed() { v = multiply(v, x) ^ c }
            if v == 0 { positions.append(p) }
        }
        guard positions.count == length else { return false }
        // Forney: Ω = S·Λ mod xⁿ; the error at Xₖ = αᵖ is Ω(Xₖ⁻¹) / Λ'(Xₖ⁻¹) (first root α¹).
        var omega = [Int](repeating: 0, count: n)
        for i in 0..<n {
            for j in 0...min(i, lambda.count - 1) { omega[i] ^= multiply(s[i - j], lambda[j]) }
        }
        for p in positions {
            let xInverse = power(-p)
            var numerator = 0
            for c in omega.reversed() { numerator = multiply(numerator, xInverse) ^ c }
            // Λ'(x): the odd-power terms, each lowered by one (characteristic 2).
            var denominator = 0, xPower = 1
            let xSquared = multiply(xInverse, xInverse)
            for i in stride(from: 1, to: lambda.count, by: 2) {
                denominator ^= multiply(lambda[i], xPower)
                xPower = multiply(xPower, xSquared)
            }
            guard denominator != 0 else { return false }
            words[count - 1 - p] ^= divide(numerator, denominator)
        }
        return syndromes(words).allSatisfy { $0 == 0 }
    }
}
