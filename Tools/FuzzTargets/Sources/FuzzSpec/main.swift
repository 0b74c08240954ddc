// Arbitrary text as `--input synthetic:SPEC`: the parser must throw a message or return a scene,
// never trap (numbers out of range, huge sizes, repeated keys, invalid UTF-8).
@testable import CVCamCLI
import FuzzSupport

runFuzzer { data, count in
    guard let start = data.map(UnsafeRawPointer.init) else { return 0 }
    let text = String(decoding: UnsafeRawBufferPointer(start: start, count: count), as: UTF8.self)
    _ = try? SyntheticSpec.parse(text)
    return 0
}
