public import Strata

/// Checks that a storage keeps the rules every Strata storage keeps, so a storage you write can be
/// tested the way Strata's own are.
///
/// The suite needs no test framework: ``run()`` throws a ``BehaviourViolation`` listing every
/// broken rule, so call it from Swift Testing, XCTest or a script. Each check runs on a fresh
/// storage from `makeStorage`, which must return an empty storage every time.
///
/// Every storage is checked for reads, writes, overwrites and removal. A storage that is also an
/// `UpdatableStorage`, `EnumerableStorage`, `ClearableStorage` or `LifetimeStorage` is checked for
/// `update(forKey:_:)`, `keys()`, `removeAll()` and lifetimes as well; concurrent updates are checked when
/// you pass ``Counting``. A cache that may drop values it was given (because of a limit) must be
/// made large enough to keep a few.
///
/// ```swift
/// @Test func myStorageBehavesLikeAStorage() async throws {
///     let counting = StorageBehaviourSuite<MyStorage>.Counting(value: { $0 }, count: { $0 })
///     let suite = StorageBehaviourSuite(keys: ["a", "b", "c"], values: [1, 2, 3], counting: counting) {
///         MyStorage()
///     }
///     try await suite.run()
/// }
/// ```
///
/// Any task may use a suite.
public struct StorageBehaviourSuite<S: Storage>: Sendable where S.Key: Hashable, S.Value: Equatable {
    /// Turns integers into values and values back into integers, so the suite can count
    /// concurrent updates.
    public struct Counting: Sendable {
        /// Returns the value that stands for `count`.
        public let value: @Sendable (Int) -> S.Value
        /// Returns the count a value stands for; the inverse of ``value``.
        public let count: @Sendable (S.Value) -> Int

        /// Creates a counting from a conversion each way.
        public init(value: @escaping @Sendable (Int) -> S.Value, count: @escaping @Sendable (S.Value) -> Int) {
            self.value = value
            self.count = count
        }
    }

    /// Creates a fresh, empty storage for each check.
    public let makeStorage: @Sendable () async throws -> S
    /// Distinct keys the checks store values under.
    public let keys: [S.Key]
    /// Distinct values the checks store.
    public let values: [S.Value]
    /// How to count with values, or `nil` to skip the concurrent update check.
    public let counting: Counting?
    /// How many concurrent updates the concurrent update check makes.
    public let concurrentUpdates: Int

    /// Creates a suite for the storages `makeStorage` returns.
    ///
    /// - Parameters:
    ///   - keys: At least three distinct keys.
    ///   - values: At least three distinct values.
    ///   - counting: How to count with values, for the concurrent update check; `nil` skips it.
    ///   - concurrentUpdates: How many updates the concurrent update check runs at once.
    ///   - makeStorage: Returns a new, empty storage; called once per check.
    public init(
        keys: [S.Key],
        values: [S.Value],
        counting: Counting? = nil,
        concurrentUpdates: Int = 200,
        makeStorage: @escaping @Sendable () async throws -> S
    ) {
        precondition(Set(keys).count >= 3 && Set(keys).count == keys.count, "give at least three distinct keys")
        precondition(values.count >= 3, "give at least three distinct values")
        for (index, value) in values.enumerated() {
            precondition(!values[..<index].contains(value), "give at least three distinct values")
        }
        precondition(concurrentUpdates > 0, "concurrentUpdates must be positive")
        self.keys = keys
        self.values = values
        self.counting = counting
        self.concurrentUpdates = concurrentUpdates
        self.makeStorage = makeStorage
    }

    /// Runs every check that applies to the storage, each on a fresh storage.
    ///
    /// - Throws: ``BehaviourViolation`` listing every check that failed, or the error
    ///   `makeStorage` threw.
    public func run() async throws {
        var failures: [BehaviourViolation.Failure] = []
        for check in checks {
            let storage = try await makeStorage()
            do {
                try await check.body(storage)
            } catch let mismatch as Mismatch {
                failures.append(.init(check: check.name, expected: mismatch.expected, seen: mismatch.seen))
            } catch {
                failures.append(.init(check: check.name, expected: "no error", seen: "it threw \(error)"))
            }
        }
        if !failures.isEmpty {
            throw BehaviourViolation(storage: String(describing: S.self), failures: failures)
        }
    }

    // MARK: Checks

    private struct Check {
        var name: String
        /// Runs the check; a check that does not apply to the storage returns at once.
        var body: (S) async throws -> Void
    }

    /// A check's first finding, turned into a ``BehaviourViolation/Failure`` by `run()`.
    private struct Mismatch: Error {
        var expected: String
        var seen: String
    }

    /// What a throwing `update` body throws.
    private struct UpdateBodyError: Error {}

    private typealias Updatable = any UpdatableStorage<S.Key, S.Value>
    private typealias Enumerable = any EnumerableStorage<S.Key, S.Value>
    private typealias Clearable = any ClearableStorage<S.Key, S.Value>
    private typealias Lifetimed = any LifetimeStorage<S.Key, S.Value>

    private var checks: [Check] {
        [
            Check(name: "absent key reads nil", body: absentKeyReadsNil),
            Check(name: "set then read returns the value", body: setThenReadReturnsTheValue),
            Check(name: "overwrite replaces", body: overwriteReplaces),
            Check(name: "removeValue removes", body: removeValueRemoves),
            Check(name: "removing an absent key does not throw", body: removingAnAbsentKeyDoesNotThrow),
            Check(name: "keys are independent", body: keysAreIndependent),
            Check(name: "values(forKeys:) reads what value(forKey:) reads, in order", body: bulkReadMatchesSingleReads),
            Check(name: "setValues stores each value, the later of two for one key", body: bulkWriteStoresEachValue),
            Check(name: "update on an absent key sees nil", body: updateOnAnAbsentKeySeesNil),
            Check(name: "update sets the value", body: updateSetsTheValue),
            Check(name: "update to nil removes", body: updateToNilRemoves),
            Check(name: "throwing update aborts and changes nothing", body: throwingUpdateAbortsAndChangesNothing),
            Check(name: "concurrent updates are not lost", body: concurrentUpdatesAreNotLost),
            Check(name: "keys() lists exactly the stored keys", body: keysListsExactlyTheStoredKeys),
            Check(name: "removeAll empties the storage", body: removeAllEmptiesTheStorage),
            Check(name: "a time to live is reported by lifetime and valueWithLifetime", body: timeToLiveIsReported),
            Check(name: "a time to live of zero removes", body: timeToLiveOfZeroRemoves),
            Check(name: "update with a time to live sets the lifetime", body: updateWithTimeToLiveSetsIt),
            Check(name: "update without a time to live keeps the lifetime", body: updateKeepsTheLifetime),
            Check(name: "update with a time to live of zero removes", body: updateWithZeroTimeToLiveRemoves),
        ]
    }

    private func absentKeyReadsNil(_ storage: S) async throws {
        for key in keys {
            try expect(await storage.value(forKey: key), toBe: nil, forKey: key)
        }
    }

    private func setThenReadReturnsTheValue(_ storage: S) async throws {
        try await storage.set(values[0], forKey: keys[0])

        try expect(await storage.value(forKey: keys[0]), toBe: values[0], forKey: keys[0])
    }

    private func overwriteReplaces(_ storage: S) async throws {
        try await storage.set(values[0], forKey: keys[0])
        try await storage.set(values[1], forKey: keys[0])

        try expect(await storage.value(forKey: keys[0]), toBe: values[1], forKey: keys[0])
    }

    private func removeValueRemoves(_ storage: S) async throws {
        try await storage.set(values[0], forKey: keys[0])
        try await storage.removeValue(forKey: keys[0])

        try expect(await storage.value(forKey: keys[0]), toBe: nil, forKey: keys[0])
    }

    private func removingAnAbsentKeyDoesNotThrow(_ storage: S) async throws {
        try await storage.removeValue(forKey: keys[0])
        try await storage.set(values[0], forKey: keys[1])
        try await storage.removeValue(forKey: keys[1])
        try await storage.removeValue(forKey: keys[1])

        try expect(await storage.value(forKey: keys[0]), toBe: nil, forKey: keys[0])
    }

    private func keysAreIndependent(_ storage: S) async throws {
        for index in 0..<3 {
            try await storage.set(values[index], forKey: keys[index])
        }
        for index in 0..<3 {
            try expect(await storage.value(forKey: keys[index]), toBe: values[index], forKey: keys[index])
        }

        try await storage.removeValue(forKey: keys[1])
        try await storage.set(values[1], forKey: keys[2])

        try expect(await storage.value(forKey: keys[0]), toBe: values[0], forKey: keys[0])
        try expect(await storage.value(forKey: keys[1]), toBe: nil, forKey: keys[1])
        try expect(await storage.value(forKey: keys[2]), toBe: values[1], forKey: keys[2])
    }

    private func bulkReadMatchesSingleReads(_ storage: S) async throws {
        try await storage.set(values[0], forKey: keys[0])
        try await storage.set(values[2], forKey: keys[2])
        let asked = [keys[2], keys[1], keys[0], keys[2]]

        let seen = try await storage.values(forKeys: asked)
        let expected = [values[2], nil, values[0], values[2]]
        guard seen == expected else {
            throw Mismatch(
                expected: "values(forKeys:) of \(asked) to be \(expected.map(describe))",
                seen: "\(seen.map(describe))"
            )
        }
        let none = try await storage.values(forKeys: [])
        guard none.isEmpty else {
            throw Mismatch(expected: "values(forKeys: []) to be empty", seen: "\(none.map(describe))")
        }
    }

    private func bulkWriteStoresEachValue(_ storage: S) async throws {
        try await storage.set(values[2], forKey: keys[1])
        try await storage.setValues([(keys[0], values[0]), (keys[1], values[1]), (keys[0], values[2])])

        try expect(await storage.value(forKey: keys[0]), toBe: values[2], forKey: keys[0])
        try expect(await storage.value(forKey: keys[1]), toBe: values[1], forKey: keys[1])
        try expect(await storage.value(forKey: keys[2]), toBe: nil, forKey: keys[2])
        try await storage.setValues([])
        try expect(await storage.value(forKey: keys[1]), toBe: values[1], forKey: keys[1])
    }

    private func updateOnAnAbsentKeySeesNil(_ storage: S) async throws {
        guard let storage = storage as? Updatable else { return }
        let seen = try await storage.update(forKey: keys[0]) { (value: inout S.Value?) -> S.Value? in value }

        if let seen {
            throw Mismatch(expected: "the body to see nil", seen: describe(seen))
        }
        try expect(await storage.value(forKey: keys[0]), toBe: nil, forKey: keys[0])
    }

    private func updateSetsTheValue(_ storage: S) async throws {
        guard let storage = storage as? Updatable else { return }
        let first = values[0]
        let second = values[1]

        let result = try await storage.update(forKey: keys[0]) { (value: inout S.Value?) -> Int in
            value = first
            return 7
        }
        try expect(await storage.value(forKey: keys[0]), toBe: first, forKey: keys[0])
        let seen = try await storage.update(forKey: keys[0]) { (value: inout S.Value?) -> S.Value? in
            defer { value = second }
            return value
        }

        if result != 7 {
            throw Mismatch(expected: "update to return what its body returned (7)", seen: "\(result)")
        }
        if seen != first {
            throw Mismatch(expected: "the body to see \(describe(first))", seen: describe(seen))
        }
        try expect(await storage.value(forKey: keys[0]), toBe: second, forKey: keys[0])
    }

    private func updateToNilRemoves(_ storage: S) async throws {
        guard let storage = storage as? Updatable else { return }
        try await storage.set(values[0], forKey: keys[0])

        try await storage.update(forKey: keys[0]) { (value: inout S.Value?) in value = nil }

        try expect(await storage.value(forKey: keys[0]), toBe: nil, forKey: keys[0])
    }

    private func throwingUpdateAbortsAndChangesNothing(_ storage: S) async throws {
        guard let storage = storage as? Updatable else { return }
        let replacement = values[1]
        try await storage.set(values[0], forKey: keys[0])

        for key in keys[0...1] {
            do {
                try await storage.update(forKey: key) { (value: inout S.Value?) in
                    value = replacement
                    throw UpdateBodyError()
                }
                throw Mismatch(expected: "StorageError code updateAborted", seen: "no error")
            } catch let error as StorageError {
                guard error.code == .updateAborted, error.underlying is UpdateBodyError else {
                    throw Mismatch(
                        expected: "StorageError code updateAborted wrapping the body's error",
                        seen: "\(error)"
                    )
                }
            }
        }

        try expect(await storage.value(forKey: keys[0]), toBe: values[0], forKey: keys[0])
        try expect(await storage.value(forKey: keys[1]), toBe: nil, forKey: keys[1])
    }

    private func concurrentUpdatesAreNotLost(_ storage: S) async throws {
        guard let storage = storage as? Updatable, let counting else { return }
        let key = keys[0]
        let updates = concurrentUpdates

        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<updates {
                group.addTask {
                    try await storage.update(forKey: key) { (value: inout S.Value?) in
                        value = counting.value((value.map(counting.count) ?? 0) + 1)
                    }
                }
            }
            try await group.waitForAll()
        }

        let final = try await storage.value(forKey: key)
        let count = final.map(counting.count) ?? 0
        if count != updates {
            throw Mismatch(expected: "\(updates) after \(updates) concurrent increments", seen: "\(count)")
        }
    }

    private func keysListsExactlyTheStoredKeys(_ storage: S) async throws {
        guard let enumerable = storage as? Enumerable else { return }
        try expect(keys: await enumerable.keys(), toBe: [])
        for index in 0..<3 {
            try await storage.set(values[index], forKey: keys[index])
        }
        try expect(keys: await enumerable.keys(), toBe: Set(keys[0..<3]))

        try await storage.removeValue(forKey: keys[1])

        try expect(keys: await enumerable.keys(), toBe: [keys[0], keys[2]])
    }

    private func removeAllEmptiesTheStorage(_ storage: S) async throws {
        guard let clearable = storage as? Clearable else { return }
        for index in 0..<3 {
            try await storage.set(values[index], forKey: keys[index])
        }

        try await clearable.removeAll()

        for key in keys {
            try expect(await storage.value(forKey: key), toBe: nil, forKey: key)
        }
        try await storage.set(values[0], forKey: keys[0])
        try expect(await storage.value(forKey: keys[0]), toBe: values[0], forKey: keys[0])
    }

    private func timeToLiveIsReported(_ storage: S) async throws {
        guard let storage = storage as? Lifetimed else { return }
        if let lifetime = try await storage.lifetime(forKey: keys[0]) {
            throw Mismatch(expected: "no lifetime for an absent key", seen: "\(lifetime)")
        }

        if let found = try await storage.valueWithLifetime(forKey: keys[0]) {
            throw Mismatch(expected: "no value and lifetime for an absent key", seen: describe(found.value))
        }

        try await storage.set(values[0], forKey: keys[0], timeToLive: .seconds(3600))

        try expect(await storage.value(forKey: keys[0]), toBe: values[0], forKey: keys[0])
        try expect(lifetime: await storage.lifetime(forKey: keys[0]), near: .seconds(3600))
        let both = try await storage.valueWithLifetime(forKey: keys[0])
        try expect(both?.value, toBe: values[0], forKey: keys[0])
        try expect(lifetime: both?.lifetime, near: .seconds(3600))
    }

    private func timeToLiveOfZeroRemoves(_ storage: S) async throws {
        guard let storage = storage as? Lifetimed else { return }
        try await storage.set(values[0], forKey: keys[0])

        try await storage.set(values[1], forKey: keys[0], timeToLive: .zero)

        try expect(await storage.value(forKey: keys[0]), toBe: nil, forKey: keys[0])
        if let lifetime = try await storage.lifetime(forKey: keys[0]) {
            throw Mismatch(expected: "no lifetime after a time to live of zero", seen: "\(lifetime)")
        }
    }

    private func updateWithTimeToLiveSetsIt(_ storage: S) async throws {
        guard let storage = storage as? Lifetimed else { return }
        let (first, second) = (values[0], values[1])
        // A new value, stored only if absent: the way a framework's `create` uses it.
        for value in [first, second] {
            try await storage.update(forKey: keys[0], timeToLive: .seconds(60)) { (current: inout S.Value?) in
                if current == nil { current = value }
            }
        }
        try expect(await storage.value(forKey: keys[0]), toBe: first, forKey: keys[0])
        try expect(lifetime: await storage.lifetime(forKey: keys[0]), near: .seconds(60))

        try await storage.set(first, forKey: keys[1], timeToLive: .seconds(3600))
        try await storage.update(forKey: keys[1], timeToLive: .seconds(60)) { (current: inout S.Value?) in
            current = second
        }

        try expect(await storage.value(forKey: keys[1]), toBe: second, forKey: keys[1])
        try expect(lifetime: await storage.lifetime(forKey: keys[1]), near: .seconds(60))
    }

    private func updateKeepsTheLifetime(_ storage: S) async throws {
        guard let storage = storage as? Lifetimed else { return }
        let second = values[1]
        try await storage.set(values[0], forKey: keys[0], timeToLive: .seconds(3600))

        try await storage.update(forKey: keys[0], timeToLive: nil) { (current: inout S.Value?) in current = second }

        try expect(await storage.value(forKey: keys[0]), toBe: second, forKey: keys[0])
        try expect(lifetime: await storage.lifetime(forKey: keys[0]), near: .seconds(3600))
    }

    private func updateWithZeroTimeToLiveRemoves(_ storage: S) async throws {
        guard let storage = storage as? Lifetimed else { return }
        let second = values[1]
        try await storage.set(values[0], forKey: keys[0])

        try await storage.update(forKey: keys[0], timeToLive: .zero) { (current: inout S.Value?) in current = second }

        try expect(await storage.value(forKey: keys[0]), toBe: nil, forKey: keys[0])
    }

    // MARK: Helpers

    /// Passes for a lifetime of at most `expected` and no more than a minute less (a slow
    /// machine's delay between the write and the read).
    private func expect(lifetime seen: Lifetime?, near expected: Duration) throws(Mismatch) {
        if case .remaining(let left)? = seen, left <= expected, left > expected - .seconds(60) { return }
        throw Mismatch(
            expected: "a lifetime of \(expected) (less up to a minute)",
            seen: seen.map { "\($0)" } ?? "no lifetime"
        )
    }

    private func expect(_ seen: S.Value?, toBe expected: S.Value?, forKey key: S.Key) throws(Mismatch) {
        guard seen != expected else { return }
        throw Mismatch(expected: "\(describe(expected)) for key \(key)", seen: describe(seen))
    }

    private func expect(keys seen: [S.Key], toBe expected: Set<S.Key>) throws(Mismatch) {
        guard seen.count != expected.count || Set(seen) != expected else { return }
        throw Mismatch(expected: "keys \(expected.sorted(by: described))", seen: "keys \(seen.sorted(by: described))")
    }

    private func describe(_ value: S.Value?) -> String {
        value.map { String(describing: $0) } ?? "nil"
    }

    private func described(_ a: S.Key, _ b: S.Key) -> Bool {
        String(describing: a) < String(describing: b)
    }
}

extension StorageBehaviourSuite.Counting where S.Value: FixedWidthInteger {
    /// Counts with the integers themselves.
    public static var integers: Self {
        Self(value: { S.Value($0) }, count: { Int($0) })
    }
}

extension StorageBehaviourSuite.Counting where S.Value == String {
    /// Counts with decimal strings such as `"42"`; a string that is not a number counts as 0.
    public static var decimalStrings: Self {
        Self(value: { String($0) }, count: { Int($0) ?? 0 })
    }
}
