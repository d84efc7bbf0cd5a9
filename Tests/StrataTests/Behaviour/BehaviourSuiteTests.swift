import Foundation
import Strata
import StrataTesting
import Testing

/// Every read-write storage Strata builds passes the behavioural suite it ships to users, and the
/// suite fails a storage that breaks the rules.
@Suite struct BehaviourSuiteTests {
    private static let keys = ["kharkiv", "kyiv", "lviv", ""]
    private static let cities: [City] = [.kharkiv, .kyiv, .lviv]

    // MARK: MemoryStorage

    @Test func memoryStoragePasses() async throws {
        let suite = StorageBehaviourSuite(keys: Self.keys, values: [1, 2, 3], counting: .integers) {
            MemoryStorage<String, Int>()
        }

        try await suite.run()
    }

    @Test func limitedExpiringMemoryStoragePasses() async throws {
        let suite = StorageBehaviourSuite(keys: Self.keys, values: [1, 2, 3], counting: .integers) {
            MemoryStorage<String, Int>(
                maximumCount: 10,
                maximumCost: 100,
                timeToLive: .seconds(60),
                clock: ManualClock()
            )
        }

        try await suite.run()
    }

    @Test(arguments: EvictionPolicy.all)
    func limitedMemoryStoragePassesWithEveryEvictionPolicy(policy: EvictionPolicy) async throws {
        let suite = StorageBehaviourSuite(keys: Self.keys, values: [1, 2, 3], counting: .integers) {
            MemoryStorage<String, Int>(maximumCount: 16, evictionPolicy: policy)
        }

        try await suite.run()
    }

    @Test func memoryStorageOfDataWithACostLimitPasses() async throws {
        let values = [Data("a".utf8), Data("bb".utf8), Data("ccc".utf8)]
        let suite = StorageBehaviourSuite(keys: Self.keys, values: values) {
            MemoryStorage<String, Data>(maximumCost: 1_000)
        }

        try await suite.run()
    }

    @Test func memoryStorageWithHashableKeysOfAnyKindPasses() async throws {
        let suite = StorageBehaviourSuite(keys: [0, 1, -1, .max], values: Self.cities) {
            MemoryStorage<Int, City>()
        }

        try await suite.run()
    }

    // MARK: Layers

    @Test func combinedStoragePasses() async throws {
        let suite = StorageBehaviourSuite(keys: Self.keys, values: [1, 2, 3], counting: .integers) {
            MemoryStorage<String, Int>().combined(with: MemoryStorage<String, Int>())
        }

        try await suite.run()
    }

    @Test func threeLayerCombinedStoragePasses() async throws {
        let suite = StorageBehaviourSuite(keys: Self.keys, values: Self.cities) {
            MemoryStorage<String, City>()
                .combined(with: MemoryStorage<String, City>())
                .combined(with: MemoryStorage<String, Data>().json(City.self))
        }

        try await suite.run()
    }

    @Test func combinedStorageOfLimitedLayersPasses() async throws {
        let suite = StorageBehaviourSuite(keys: Self.keys, values: [1, 2, 3], counting: .integers) {
            MemoryStorage<String, Int>(maximumCount: 4)
                .combined(with: MemoryStorage<String, Int>(maximumCount: 8))
        }

        try await suite.run()
    }

    @Test func backedStoragePasses() async throws {
        let suite = StorageBehaviourSuite(keys: Self.keys, values: [1, 2, 3], counting: .integers) {
            MemoryStorage<String, Int>().backed(by: MemoryStorage<String, Int>())
        }

        try await suite.run()
    }

    @Test func pushingStoragePasses() async throws {
        let suite = StorageBehaviourSuite(keys: Self.keys, values: [1, 2, 3]) {
            MemoryStorage<String, Int>().pushing(to: MemoryStorage<String, Int>())
        }

        try await suite.run()
    }

    // MARK: Transforms

    @Test func mappedValuesStoragePasses() async throws {
        let suite = StorageBehaviourSuite(keys: Self.keys, values: [1, 2, 3], counting: .integers) {
            MemoryStorage<String, String>().mapValues(reading: { Int($0) ?? -1 }, writing: { String($0) })
        }

        try await suite.run()
    }

    @Test func mappedKeysStoragePasses() async throws {
        let suite = StorageBehaviourSuite(keys: [1, 2, 3], values: [1, 2, 3], counting: .integers) {
            MemoryStorage<String, Int>().mapKeys { (number: Int) in "key-\(number)" }
        }

        try await suite.run()
    }

    @Test func stringKeyedStoragePasses() async throws {
        let suite = StorageBehaviourSuite(keys: ["1", "2", "-3"], values: [1, 2, 3], counting: .integers) {
            MemoryStorage<Int, Int>().usingStringKeys()
        }

        try await suite.run()
    }

    @Test func rawRepresentableKeyedStoragePasses() async throws {
        enum Planet: String, Sendable {
            case mercury, venus, earth
        }
        let suite = StorageBehaviourSuite(keys: [Planet.mercury, .venus, .earth], values: [1, 2, 3]) {
            MemoryStorage<String, Int>().mapKeys(to: Planet.self)
        }

        try await suite.run()
    }

    @Test func fallbackStoragePasses() async throws {
        let suite = StorageBehaviourSuite(keys: Self.keys, values: [1, 2, 3]) {
            MemoryStorage<String, Int>().fallback { _ in nil }
        }

        try await suite.run()
    }

    @Test func zippedStorageMappedToAStructPasses() async throws {
        struct Pair: Equatable, Sendable {
            var name: String
            var number: Int
        }
        let values = [Pair(name: "a", number: 1), Pair(name: "a", number: 2), Pair(name: "b", number: 1)]
        let suite = StorageBehaviourSuite(keys: Self.keys, values: values) {
            zip(MemoryStorage<String, String>(), MemoryStorage<String, Int>())
                .mapValues(reading: { Pair(name: $0.0, number: $0.1) }, writing: { ($0.name, $0.number) })
        }

        try await suite.run()
    }

    // MARK: Codecs

    @Test func jsonStoragePasses() async throws {
        let suite = StorageBehaviourSuite(keys: Self.keys, values: Self.cities) {
            MemoryStorage<String, Data>().json(City.self)
        }

        try await suite.run()
    }

    @Test func jsonCountingStoragePasses() async throws {
        let suite = StorageBehaviourSuite(keys: Self.keys, values: [1, 2, 3], counting: .integers) {
            MemoryStorage<String, Data>().json(Int.self)
        }

        try await suite.run()
    }

    @Test func propertyListStoragePasses() async throws {
        let suite = StorageBehaviourSuite(keys: Self.keys, values: Self.cities) {
            MemoryStorage<String, Data>().propertyList(City.self)
        }

        try await suite.run()
    }

    @Test func stringStoragePasses() async throws {
        let suite = StorageBehaviourSuite(keys: Self.keys, values: ["1", "2", "Харків"], counting: .decimalStrings) {
            MemoryStorage<String, Data>().string()
        }

        try await suite.run()
    }

    @Test func jsonValueStoragePasses() async throws {
        let values: [JSONValue] = [["theme": "dark"], [1, 2, nil], "text"]
        let suite = StorageBehaviourSuite(keys: Self.keys, values: values) {
            MemoryStorage<String, Data>().jsonValue()
        }

        try await suite.run()
    }

    // MARK: Test storages

    @Test func gatedStoragePasses() async throws {
        let suite = StorageBehaviourSuite(keys: Self.keys, values: [1, 2, 3], counting: .integers) {
            GatedStorage<String, Int>()
        }

        try await suite.run()
    }

    // MARK: The suite fails what breaks the rules

    /// A storage with the bugs the suite exists to catch: removal does nothing, an update reads
    /// and writes in two steps, and a throwing update reports the wrong error.
    private final class BrokenStorage: UpdatableStorage, EnumerableStorage {
        let base = MemoryStorage<String, Int>()

        func value(forKey key: String) async throws(StorageError) -> Int? {
            base.value(forKey: key)
        }

        func set(_ value: Int, forKey key: String) async throws(StorageError) {
            base.set(value, forKey: key)
        }

        func removeValue(forKey key: String) async throws(StorageError) {}

        func update<Result>(
            forKey key: String,
            _ body: (inout Int?) throws -> Result
        ) async throws(StorageError) -> Result {
            var value = base.value(forKey: key)
            await Task.yield()
            let result: Result
            do {
                result = try body(&value)
            } catch {
                throw StorageError(.io, key: key, storage: "BrokenStorage", message: "failed", underlying: error)
            }
            if let value {
                base.set(value, forKey: key)
            }
            return result
        }

        func keys() async throws(StorageError) -> [String] {
            base.keys()
        }
    }

    @Test func brokenStorageFailsWithEveryBrokenRuleListed() async throws {
        let suite = StorageBehaviourSuite(keys: Self.keys, values: [1, 2, 3], counting: .integers) {
            BrokenStorage()
        }

        let violation = await #expect(throws: BehaviourViolation.self) {
            try await suite.run()
        }

        #expect(
            violation?.failedChecks == [
                "removeValue removes",
                "keys are independent",
                "update to nil removes",
                "throwing update aborts and changes nothing",
                "concurrent updates are not lost",
                "keys() lists exactly the stored keys",
            ]
        )
        #expect(violation?.storage.contains("BrokenStorage") == true)
        #expect(violation?.description.contains("removeValue removes: expected nil for key kharkiv, saw 1") == true)
    }

    @Test func defaultingStorageFailsTheChecksThatNeedAbsence() async throws {
        let suite = StorageBehaviourSuite(keys: Self.keys, values: [1, 2, 3], counting: .integers) {
            MemoryStorage<String, Int>().defaulting(to: 0)
        }

        let violation = await #expect(throws: BehaviourViolation.self) {
            try await suite.run()
        }

        #expect(violation?.failedChecks.first == "absent key reads nil")
        #expect(violation?.failures.first?.seen == "0")
        #expect(violation?.failedChecks.contains("set then read returns the value") == false)
        #expect(violation?.failedChecks.contains("concurrent updates are not lost") == false)
    }

    @Test func errorFromMakeStorageIsRethrown() async throws {
        let suite = StorageBehaviourSuite(keys: Self.keys, values: [1, 2, 3]) {
            () throws(StorageError) -> MemoryStorage<String, Int> in
            throw StorageError(.io, storage: "Unopenable", message: "the folder cannot be read")
        }

        let error = await #expect(throws: StorageError.self) {
            try await suite.run()
        }

        #expect(error?.code == .io)
        #expect(error?.storage == "Unopenable")
    }
}
