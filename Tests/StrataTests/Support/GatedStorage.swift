import Strata
import Synchronization

/// A storage over a ``MemoryStorage`` whose next read or next write can be held part-way until the
/// test releases it, so a test can interleave operations exactly instead of hoping a race happens.
///
/// A held read has already read its value from `base`; a held write has not yet written it. The
/// storage signals when an operation is held. Any task may use it.
final class GatedStorage<Key: Hashable & Sendable, Value: Sendable>: UpdatableStorage, ClearableStorage {
    /// Where the values live; read and write it directly to set up or inspect a test.
    let base = MemoryStorage<Key, Value>()
    let reads = Gate()
    let writes = Gate()

    func value(forKey key: Key) async throws(StorageError) -> Value? {
        let value = base.value(forKey: key)
        await reads.passThrough()
        return value
    }

    func set(_ value: Value, forKey key: Key) async throws(StorageError) {
        await writes.passThrough()
        base.set(value, forKey: key)
    }

    func removeValue(forKey key: Key) async throws(StorageError) {
        await writes.passThrough()
        base.removeValue(forKey: key)
    }

    func update<Result>(
        forKey key: Key,
        _ body: (inout Value?) throws -> Result
    ) async throws(StorageError) -> Result {
        await writes.passThrough()
        return try base.update(forKey: key, body)
    }

    func removeAll() async throws(StorageError) {
        await writes.passThrough()
        base.removeAll()
    }
}

/// Holds the next operation that passes through it, once armed, until released.
///
/// Safe to share between tasks: arming is atomic, and the streams buffer a signal sent before
/// anyone waits for it. Only one operation is held per arming.
final class Gate: Sendable {
    private let isArmed = Atomic<Bool>(false)
    private let entered = AsyncStream<Void>.makeStream()
    private let released = AsyncStream<Void>.makeStream()

    /// Makes the next operation wait at the gate.
    func holdNext() {
        isArmed.store(true, ordering: .sequentiallyConsistent)
    }

    /// Returns once an operation is waiting at the gate.
    func waitUntilHeld() async {
        for await _ in entered.stream { return }
    }

    /// Lets the waiting operation go on.
    func release() {
        released.continuation.yield()
    }

    /// Called by the operation: waits here if the gate is armed, and disarms it.
    func passThrough() async {
        guard isArmed.exchange(false, ordering: .sequentiallyConsistent) else { return }
        entered.continuation.yield()
        for await _ in released.stream { return }
    }
}
