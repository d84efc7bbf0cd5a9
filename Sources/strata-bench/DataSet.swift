import Foundation
import _StrataInternals

/// The keys and values the figures store: by default 100,000 `String` keys `key-<i>` with
/// 100-byte `Data` values, each value distinct.
///
/// Keys up to 15 UTF-8 bytes are small strings, held inline without a heap object, so copying
/// a key out of an array costs no reference counting in the subject or in the baseline.
struct DataSet {
    /// The shared default data set, built on first use.
    static let standard = DataSet()
    /// 1,000 keys and values, few enough to stay in the processor's caches.
    static let small = DataSet(count: 1_000)

    let keys: [String]
    let values: [Data]

    init(count: Int = 100_000, valueByteCount: Int = 100) {
        keys = (0..<count).map { "key-\($0)" }
        values = (0..<count).map { index in
            Data((0..<valueByteCount).map { UInt8(truncatingIfNeeded: index &+ $0) })
        }
    }

    var count: Int { keys.count }

    /// `count` indices into ``keys``, in a random-looking order that is the same on every run.
    func randomIndices(_ count: Int, seed: UInt64 = 0x5EED) -> [Int] {
        var generator = SplitMix64(seed: seed)
        return (0..<count).map { _ in Int.random(in: 0..<self.count, using: &generator) }
    }

    /// A key that is not in the data set, of the same shape as the keys that are.
    func missingKey(_ index: Int) -> String {
        "key-\(count + index)"
    }
}
