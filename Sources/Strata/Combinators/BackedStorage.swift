public import Logging

/// A storage read from its front and, on a miss, from its back; written to the front only.
///
/// Created by ``ReadableStorage/backed(by:reporting:logger:)``. When the front can be written, a back hit is pulled
/// forward into it, and the backfill never overwrites a value that a concurrent write through
/// this storage put in the front, nor refills a key that a write removed while the back was read.
/// The back is never written. A front that fails to read does not fail the read: the back
/// answers and the front's error is reported (see ``ReadableStorage/backed(by:reporting:logger:)``);
/// when both fail, the back's error is thrown. Any task may use it.
///
/// When the front is an ``UpdatableStorage`` (``MemoryStorage``, `DiskStorage`, the database
/// storages), no lock is held while either layer works: the backfill is one conditional update of
/// the front that stores the value only where the front holds nothing and no write of the key's
/// stripe has begun since the read did. Over any other front, the writes of a stripe take turns
/// and a backfill happens only when no write of its stripe is under way: a backfill that would
/// have to wait is skipped, so a read never waits for a write.
///
/// ```swift
/// let bundled = MemoryStorage<String, String>().backed(by: defaults.readOnly()).readOnly()
/// ```
public struct BackedStorage<Front: ReadableStorage, Back: ReadableStorage>: ReadableStorage
where Front.Key == Back.Key, Front.Value == Back.Value, Front.Key: Hashable {
    /// The type that names a value.
    public typealias Key = Front.Key
    /// The type of the values.
    public typealias Value = Front.Value

    /// How backfills and writes keep out of each other's way.
    @usableFromInline
    enum Coordination: Sendable {
        /// Writes of a stripe take turns, and a backfill is skipped while one runs (a front that
        /// cannot write conditionally).
        case gate(WriteGate)
        /// Nothing waits: a backfill checks, inside the front's own atomic update, that no write
        /// has begun since its read did.
        case tracker(WriteTracker)
    }

    /// Stores a value read from the back in the front, if the front still holds nothing for the
    /// key and the closure it is given still answers `true` when the store commits.
    @usableFromInline
    typealias PullForward = @Sendable (Value, Key, _ isFresh: @Sendable () -> Bool) async throws(StorageError) -> Void

    /// The layer read first and, if writable, filled from the back.
    public let front: Front
    /// The layer read on a front miss.
    public let back: Back
    @usableFromInline let coordination: Coordination
    @usableFromInline let pullForward: PullForward?
    /// Hears of each front failure that a back read made up for.
    @usableFromInline let report: @Sendable (StorageError) -> Void

    @inlinable
    init(
        front: Front,
        back: Back,
        coordination: Coordination,
        report: @escaping @Sendable (StorageError) -> Void,
        pullForward: PullForward?
    ) {
        self.front = front
        self.back = back
        self.coordination = coordination
        self.report = report
        self.pullForward = pullForward
    }

    /// Returns the value for `key`, or `nil` if there is none.
    @inlinable
    public func value(forKey key: Key) async throws(StorageError) -> Value? {
        switch coordination {
        case .tracker(let tracker):
            let ticket = tracker.beginRead(of: key)
            guard let (value, fromBack) = try await read(key) else { return nil }
            if fromBack, let pullForward, tracker.isUndisturbed(since: ticket) {
                // The read succeeded; a front that cannot take the value only costs a later miss.
                try? await pullForward(value, key) { tracker.isUndisturbed(since: ticket) }
            }
            return value
        case .gate(let gate):
            let stripe = gate.stripe(for: key)
            let generation = gate.snapshot(stripe)
            guard let (value, fromBack) = try await read(key) else { return nil }
            if fromBack, let pullForward {
                try? await gate.backfill(stripe, ifUnchangedSince: generation) { () throws(StorageError) in
                    try await pullForward(value, key) { true }
                }
            }
            return value
        }
    }

    /// Reads the front, then the back on a miss or a front failure; says which layer answered.
    @inlinable
    func read(_ key: Key) async throws(StorageError) -> (Value, fromBack: Bool)? {
        try await readBackAfterFront(front, back, key, report: report).map { ($0.value, $0.fromBack) }
    }

    /// Runs a write of `key` to the front so that no backfill lands a value read before it.
    @inlinable
    func write<Result>(
        _ key: Key,
        _ body: () async throws(StorageError) -> Result
    ) async throws(StorageError) -> Result {
        switch coordination {
        case .tracker(let tracker):
            let ticket = tracker.beginWrite(of: key)
            defer { _ = tracker.endWrite(ticket) }
            return try await body()
        case .gate(let gate):
            return try await gate.write(gate.stripe(for: key), body)
        }
    }
}

extension BackedStorage: WritableStorage where Front: WritableStorage {
    /// Stores `value` in the front only.
    @inlinable
    public func set(_ value: Value, forKey key: Key) async throws(StorageError) {
        try await write(key) { () throws(StorageError) in
            try await front.set(value, forKey: key)
        }
    }

    /// Removes the value from the front only; the back may still supply it on the next read.
    @inlinable
    public func removeValue(forKey key: Key) async throws(StorageError) {
        try await write(key) { () throws(StorageError) in
            try await front.removeValue(forKey: key)
        }
    }
}

extension BackedStorage: Storage where Front: Storage {}

extension ReadableStorage where Key: Hashable {
    /// Returns a read-only storage that reads this storage first and `back` on a miss.
    @inlinable
    public func backed<Back: ReadableStorage<Key, Value>>(
        by back: Back,
        reporting report: @escaping @Sendable (StorageError) -> Void = { _ in },
        logger: Logger? = nil
    ) -> BackedStorage<Self, Back> {
        BackedStorage(
            front: self,
            back: back,
            coordination: .tracker(WriteTracker()),
            report: loggingReports(report, to: logger, as: "BackedStorage"),
            pullForward: nil
        )
    }
}

extension Storage where Key: Hashable {
    /// Returns a storage that reads this storage first and `back` on a miss, keeping what it finds
    /// here; writes go to this storage only.
    @inlinable
    public func backed<Back: ReadableStorage<Key, Value>>(
        by back: Back,
        reporting report: @escaping @Sendable (StorageError) -> Void = { _ in },
        logger: Logger? = nil
    ) -> BackedStorage<Self, Back> {
        BackedStorage(
            front: self,
            back: back,
            coordination: .gate(WriteGate()),
            report: loggingReports(report, to: logger, as: "BackedStorage")
        ) {
            (value, key, _) throws(StorageError) in
            try await self.set(value, forKey: key)
        }
    }
}

extension UpdatableStorage where Key: Hashable {
    /// Returns a storage that reads this storage first and `back` on a miss, keeping what it finds
    /// here; writes go to this storage only.
    ///
    /// What the back supplies is stored here by one ``UpdatableStorage/update(forKey:_:)`` that
    /// writes only where this storage holds nothing, so no lock is held while either layer works.
    @inlinable
    public func backed<Back: ReadableStorage<Key, Value>>(
        by back: Back,
        reporting report: @escaping @Sendable (StorageError) -> Void = { _ in },
        logger: Logger? = nil
    ) -> BackedStorage<Self, Back> {
        BackedStorage(
            front: self,
            back: back,
            coordination: .tracker(WriteTracker()),
            report: loggingReports(report, to: logger, as: "BackedStorage")
        ) {
            (value, key, isFresh) throws(StorageError) in
            try await self.update(forKey: key) { current in
                if current == nil, isFresh() { current = value }
            }
        }
    }
}

/// Reads `front`, then `back` when the front has nothing or fails: a failing cache layer
/// degrades to the layer behind it. The front's error goes to `report` (also when the back fails
/// too, whose error is then thrown, as Shallows' layers do). Says which layer answered.
@inlinable
func readBackAfterFront<Front: ReadableStorage, Back: ReadableStorage>(
    _ front: Front,
    _ back: Back,
    _ key: Front.Key,
    report: @Sendable (StorageError) -> Void
) async throws(StorageError) -> (value: Front.Value, fromBack: Bool)?
where Front.Key == Back.Key, Front.Value == Back.Value {
    var frontFailure: StorageError?
    do throws(StorageError) {
        switch try front.immediateValue(forKey: key) {
        case .found(let value): return (value, false)
        case .absent: break
        case .unavailable:
            if let value = try await front.value(forKey: key) { return (value, false) }
        }
    } catch {
        frontFailure = error
    }
    let value: Front.Value?
    do throws(StorageError) {
        value = try await back.value(forKey: key)
    } catch {
        if let frontFailure { report(frontFailure) }
        throw error
    }
    if let frontFailure { report(frontFailure) }
    return value.map { ($0, true) }
}
