import Foundation
import StrataTestSupport
import Testing
import _StrataInternals

@testable import Strata

/// Tasks hammering one ``DiskStorage`` with random operations under a byte limit; CI runs this
/// suite again under ThreadSanitizer (`swift test --sanitize=thread --filter StressTests`).
///
/// Each task draws from its own seeded generator, so the operations (though not their
/// interleaving) repeat from run to run.
@Suite(.tags(.stress), .onTestThreads) struct DiskStressTests {
    struct Workload: Sendable, CustomTestStringConvertible {
        var taskCount: Int
        var operationsPerTask: Int
        var keySpace: Int
        var maximumByteCount: Int
        var largestValue: Int

        /// Many keys, most operations evicting something.
        static let wide = Workload(
            taskCount: 2,
            operationsPerTask: 50_000,
            keySpace: 24,
            maximumByteCount: 6 * 1024,
            largestValue: 400
        )
        /// Four tasks on three keys, so that operations on one key race each other.
        static let contended = Workload(
            taskCount: 4,
            operationsPerTask: 5_000,
            keySpace: 3,
            maximumByteCount: 400,
            largestValue: 200
        )

        var testDescription: String {
            "\(taskCount) tasks × \(operationsPerTask) operations on \(keySpace) keys, \(maximumByteCount) bytes"
        }

        func randomValue(using generator: inout SeededRandomNumberGenerator) -> Data {
            let isOversize = Int.random(in: 0..<200, using: &generator) == 0
            let size = isOversize ? maximumByteCount + 1 : Int.random(in: 0...largestValue, using: &generator)
            return Data(repeating: UInt8(truncatingIfNeeded: size), count: size)
        }
    }

    /// Whether a value read back is one some task wrote: its bytes all equal its length's low byte.
    private static func isWhole(_ value: Data) -> Bool {
        value.allSatisfy { $0 == UInt8(truncatingIfNeeded: value.count) }
    }

    /// Runs one task's operations; returns what went wrong.
    private static func hammer(_ storage: DiskStorage, _ workload: Workload, seed: UInt64) -> [String] {
        var generator = SeededRandomNumberGenerator(seed: seed)
        var problems: [String] = []
        for _ in 0..<workload.operationsPerTask where problems.count < 10 {
            let key = "key-\(Int.random(in: 0..<workload.keySpace, using: &generator))"
            do {
                switch Int.random(in: 0..<20, using: &generator) {
                case 0..<9:
                    if let value = try storage.value(forKey: key), !isWhole(value) {
                        problems.append("\(key) read back \(value.count) bytes that no task wrote")
                    }
                case 9..<16:
                    try storage.set(workload.randomValue(using: &generator), forKey: key)
                case 16..<18:
                    try storage.removeValue(forKey: key)
                default:
                    let replacement = workload.randomValue(using: &generator)
                    try storage.update(forKey: key) { value in
                        value = value == nil ? replacement : nil
                    }
                }
            } catch {
                problems.append("\(key): \(error)")
            }
        }
        return problems
    }

    @Test(arguments: [Workload.wide, Workload.contended])
    func randomOperationsKeepTheLimitAndTheIndexAgreesWithTheDisk(workload: Workload) async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let storage = try DiskStorage(
            url: folder.url,
            options: DiskStorage.Options(maximumByteCount: workload.maximumByteCount)
        )

        let problems = await withTaskGroup(of: [String].self) { group in
            for task in 0..<workload.taskCount {
                // Blocking file I/O in a loop: on the tests' own threads, never the cooperative pool.
                group.addTask {
                    await TestThreads.run { Self.hammer(storage, workload, seed: UInt64(task) &+ 0xD15C) }
                }
            }
            return await group.reduce(into: []) { $0 += $1 }
        }

        #expect(problems.isEmpty, "\(problems.prefix(10))")
        let files = StoreFiles(of: folder.url)
        #expect(storage.totalSize <= workload.maximumByteCount)
        #expect(files.totalSize == storage.totalSize)
        #expect(files.records.count == storage.count)
        #expect(try await Set(files.keys.values) == Set(storage.keys()))
        #expect(files.keys.count == files.records.count, "every file on disk is a sound record")
        #expect(files.temporaries.isEmpty)
        let reopened = try DiskStorage(url: folder.url)
        #expect(reopened.totalSize == storage.totalSize)
        #expect(reopened.statistics.damagedFiles == 0)
    }
}
