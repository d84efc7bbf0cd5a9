import Foundation
import MallocInterposerSwift
import Strata

/// `strata-bench footprint`: the heap bytes a `MemoryStorage<Int, Int>` limited to 100,000
/// entries takes per entry held, at 1% fill and full, for each eviction policy, beside a
/// locked `[Int: Int]` holding the same entries: `memory.bytes.per.entry`.
///
/// Bytes are what the malloc interposer saw allocated and not freed while the storage was made
/// and filled, so they include the dictionary, the policy's links, sketch and ghosts, and nothing
/// of the keys' or values' own (they are integers).
enum FootprintCommand {
    static let usage = """
        USAGE: strata-bench footprint

        Prints memory.bytes.per.entry: heap bytes per entry held of MemoryStorage<Int, Int>
        (maximumCount 100,000) at 1% fill and full, for each eviction policy, and of a locked
        dictionary holding the same entries.
        """

    static let limit = 100_000

    static func run(arguments: [String]) -> Int32 {
        if arguments.contains("-h") || arguments.contains("--help") {
            print(usage)
            return 0
        }
        guard AllocationCounter.prepare() else {
            FileHandle.standardError.write(Data("strata-bench footprint: cannot count heap bytes here\n".utf8))
            return 1
        }
        print("memory.bytes.per.entry: heap bytes per entry held, MemoryStorage<Int, Int>(maximumCount: 100,000)")
        print("")
        print("structure          1% full (1,000)   full (100,000)")
        print("----------------- ---------------- ----------------")
        for (name, policy) in Benchmark.policies {
            do {
                let make = { MemoryStorage<Int, Int>(maximumCount: limit, evictionPolicy: policy) }
                print(row(name, try bytesPerEntry(entries: limit / 100, make), try bytesPerEntry(entries: limit, make)))
            } catch {
                FileHandle.standardError.write(Data("strata-bench footprint: \(name): \(error)\n".utf8))
                return 1
            }
        }
        let sparse = lockedDictionaryBytesPerEntry(entries: limit / 100)
        let full = lockedDictionaryBytesPerEntry(entries: limit)
        print(row("locked dictionary", sparse, full))
        return 0
    }

    private static func row(_ name: String, _ sparse: Double, _ full: Double) -> String {
        name.padding(toLength: 17, withPad: " ", startingAt: 0) + " "
            + String(format: "%16.1f %16.1f", sparse, full)
    }

    /// Makes a storage and sets `entries` keys in it with counting on; returns the bytes still
    /// allocated per entry.
    private static func bytesPerEntry(
        entries: Int,
        _ make: () throws -> MemoryStorage<Int, Int>
    ) throws -> Double {
        MallocInterposerSwift.reset()
        MallocInterposerSwift.hook()
        defer { MallocInterposerSwift.unhook() }
        let storage = try make()
        for key in 0..<entries { storage.set(key, forKey: key) }
        MallocInterposerSwift.unhook()
        let statistics = MallocInterposerSwift.getStatistics()
        withExtendedLifetime(storage) {}
        return Double(statistics.mallocBytesCount - statistics.freeBytesCount) / Double(entries)
    }

    private static func lockedDictionaryBytesPerEntry(entries: Int) -> Double {
        MallocInterposerSwift.reset()
        MallocInterposerSwift.hook()
        let dictionary = LockedDictionary()
        for key in 0..<entries { dictionary.set(key, forKey: key) }
        MallocInterposerSwift.unhook()
        let statistics = MallocInterposerSwift.getStatistics()
        withExtendedLifetime(dictionary) {}
        return Double(statistics.mallocBytesCount - statistics.freeBytesCount) / Double(entries)
    }
}

/// The locked dictionary of the footprint table: a dictionary behind a lock, as an app would
/// write a cache without limits.
private final class LockedDictionary: @unchecked Sendable {
    // Safe: `entries` is only touched under `lock`.
    private let lock = NSLock()
    private var entries: [Int: Int] = [:]

    func set(_ value: Int, forKey key: Int) {
        lock.lock()
        entries[key] = value
        lock.unlock()
    }
}
