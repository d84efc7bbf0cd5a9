import Strata

/// A storage over a ``MemoryStorage`` whose chosen operations always fail with
/// ``StorageError/Code/io``, as a disk or server might. Any task may use it.
final class FailingStorage<Key: Hashable & Sendable, Value: Sendable>: UpdatableStorage, EnumerableStorage,
    ClearableStorage
{
    enum Operation: Hashable, Sendable {
        case read, set, remove, update, keys, removeAll
    }

    /// Where the values live; read and write it directly to set up or inspect a test.
    let base = MemoryStorage<Key, Value>()
    let failing: Set<Operation>
    /// The storage named in the errors it throws.
    let name: String

    init(failing: Set<Operation>, name: String = "FailingStorage") {
        self.failing = failing
        self.name = name
    }

    private func check(_ operation: Operation, key: Key? = nil) throws(StorageError) {
        guard failing.contains(operation) else { return }
        throw StorageError(.io, key: key, storage: name, message: "injected \(operation) failure")
    }

    func value(forKey key: Key) async throws(StorageError) -> Value? {
        try check(.read, key: key)
        return base.value(forKey: key)
    }

    func set(_ value: Value, forKey key: Key) async throws(StorageError) {
        try check(.set, key: key)
        base.set(value, forKey: key)
    }

    func removeValue(forKey key: Key) async throws(StorageError) {
        try check(.remove, key: key)
        base.removeValue(forKey: key)
    }

    func update<Result>(
        forKey key: Key,
        _ body: (inout Value?) throws -> Result
    ) async throws(StorageError) -> Result {
        try check(.update, key: key)
        return try base.update(forKey: key, body)
    }

    func keys() async throws(StorageError) -> [Key] {
        try check(.keys)
        return base.keys()
    }

    func removeAll() async throws(StorageError) {
        try check(.removeAll)
        base.removeAll()
    }
}
