import Foundation
import Strata
import StrataTesting
import Testing

/// `AnyStorage` and `AnyUpdatableStorage` keep every rule of the storage they wrap, batches and
/// immediate answers included, and a chain of any type fits one property.
@Suite struct AnyStorageTests {
    static let counting = StorageBehaviourSuite<AnyUpdatableStorage<String, Data>>.Counting(
        value: { Data(String($0).utf8) },
        count: { Int(String(decoding: $0, as: UTF8.self)) ?? -1 }
    )

    @Test func anErasedUpdatableChainKeepsTheRulesOfEveryStorage() async throws {
        try await StorageBehaviourSuite(
            keys: ["a", "b", "c", "é"],
            values: [Data("one".utf8), Data("two".utf8), Data("three".utf8), Data()],
            counting: Self.counting
        ) {
            AnyUpdatableStorage(MemoryStorage<String, Data>().combined(with: MemoryStorage<String, Data>()))
        }
        .run()
    }

    @Test func anErasedStorageKeepsTheRulesOfEveryStorage() async throws {
        try await StorageBehaviourSuite(
            keys: ["a", "b", "c"],
            values: [Data("one".utf8), Data("two".utf8), Data("three".utf8)]
        ) {
            MemoryStorage<String, Data>().eraseToAnyStorage()
        }
        .run()
    }

    @Test func aPropertyHoldsChainsOfDifferentTypes() async throws {
        let memory = MemoryStorage<String, Data>()
        let front = MemoryStorage<String, Data>()
        var chains: [AnyStorage<String, Data>] = [AnyStorage(memory)]
        chains.append(front.combined(with: memory).eraseToAnyStorage())
        chains.append(AnyStorage(chains[0]))

        try await chains[1].set(Data([1]), forKey: "k")

        #expect(try await chains[0].value(forKey: "k") == Data([1]))
        #expect(try chains[2].immediateValue(forKey: "k") == .found(Data([1])))
        #expect(try chains[0].immediateValue(forKey: "missing") == .absent)
        #expect(try await chains[2].values(forKeys: ["k", "missing"]) == [Data([1]), nil])
        try await chains[2].setValues([(key: "a", value: Data([2])), (key: "b", value: Data([3]))])
        #expect(memory.value(forKey: "b") == Data([3]))
        try await chains[0].removeValue(forKey: "a")
        #expect(memory.value(forKey: "a") == nil)
    }

    @Test func anErasedUpdatableStorageUpdatesAtomically() async throws {
        let counters = MemoryStorage<String, Int>().eraseToAnyUpdatableStorage()

        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<100 {
                group.addTask { _ = try? await counters.update(forKey: "visits", default: 0) { $0 += 1 } }
            }
        }

        #expect(try await counters.value(forKey: "visits") == 100)
        let error = await #expect(throws: StorageError.self) {
            try await counters.update(forKey: "visits") { _ in throw CocoaError(.userCancelled) }
        }
        #expect(error?.code == .updateAborted)
        #expect(try await counters.value(forKey: "visits") == 100)
    }
}
