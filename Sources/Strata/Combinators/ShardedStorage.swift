import Foundation
import _StrataInternals

/// A storage that spreads keys over several storages by a stable hash of the key.
///
/// Created by ``sharded(across:)`` or ``sharded(across:hashingKeysWith:)``. Each key lives in
/// exactly one shard, chosen by jump consistent hashing (Lamping and Veach, 2014) over a 64-bit
/// hash that is the same in every process and on every machine, so processes sharing the shards
/// agree where each key lives. Growing from `n` to `n + 1` shards moves only about `1 / (n + 1)`
/// of the keys, all of them to the new shard; the order of the shards matters, so add new ones at
/// the end. Keys are not moved for you: after adding a shard, the keys that now map to it read
/// as absent until they are written again (fine for a cache; copy them over for a store).
///
/// `keys()` and `removeAll()` visit every shard in turn. Any task may use it.
public struct ShardedStorage<Shard: KeyValueStorage>: KeyValueStorage {
    public typealias Key = Shard.Key
    public typealias Value = Shard.Value

    /// The shards, in the order that decides where keys live.
    public let shards: [Shard]
    /// The stable 64-bit hash of a key.
    public let hash: @Sendable (Key) -> UInt64

    init(shards: [Shard], hash: @escaping @Sendable (Key) -> UInt64) {
        precondition(!shards.isEmpty, "sharded(across:) needs at least one shard")
        precondition(shards.count <= Int(Int32.max), "too many shards")
        self.shards = shards
        self.hash = hash
    }

    /// The index in ``shards`` of the shard that holds `key`.
    public func shardIndex(forKey key: Key) -> Int {
        Self.jumpConsistentHash(hash(key), buckets: shards.count)
    }

    /// The shard that holds `key`.
    public func shard(forKey key: Key) -> Shard {
        shards[shardIndex(forKey: key)]
    }

    /// Jump consistent hashing: maps `key` to one of `buckets` buckets so that growing the number
    /// of buckets by one moves only `1 / buckets` of the keys, all to the new bucket.
    static func jumpConsistentHash(_ key: UInt64, buckets: Int) -> Int {
        var key = key
        var bucket: Int64 = -1
        var next: Int64 = 0
        while next < Int64(buckets) {
            bucket = next
            key = key &* 2_862_933_555_777_941_757 &+ 1
            next = Int64(Double(bucket + 1) * (Double(Int64(1) << 31) / Double((key >> 33) + 1)))
        }
        return Int(bucket)
    }
}

extension ShardedStorage: ReadableStorage where Shard: ReadableStorage {
    public func value(forKey key: Key) async throws(StorageError) -> Value? {
        try await shard(forKey: key).value(forKey: key)
    }

    public func immediateValue(forKey key: Key) throws(StorageError) -> ImmediateLookup<Value> {
        try shard(forKey: key).immediateValue(forKey: key)
    }
}

extension ShardedStorage: WritableStorage where Shard: WritableStorage {
    public func set(_ value: Value, forKey key: Key) async throws(StorageError) {
        try await shard(forKey: key).set(value, forKey: key)
    }

    public func removeValue(forKey key: Key) async throws(StorageError) {
        try await shard(forKey: key).removeValue(forKey: key)
    }
}

extension ShardedStorage: Storage where Shard: Storage {}

extension ShardedStorage: UpdatableStorage where Shard: UpdatableStorage {
    /// Updates `key` in its shard, as atomically as that shard does.
    public func update<Result>(
        forKey key: Key,
        _ body: (inout Value?) throws -> Result
    ) async throws(StorageError) -> Result {
        try await shard(forKey: key).update(forKey: key, body)
    }
}

extension ShardedStorage: LifetimeStorage where Shard: LifetimeStorage {
    /// Stores `value` for `key` in its shard, expiring after `timeToLive` (the shard's default
    /// when `nil`).
    public func set(_ value: Value, forKey key: Key, timeToLive: Duration?) async throws(StorageError) {
        try await shard(forKey: key).set(value, forKey: key, timeToLive: timeToLive)
    }

    /// How long the value for `key` has left in its shard.
    public func lifetime(forKey key: Key) async throws(StorageError) -> Lifetime? {
        try await shard(forKey: key).lifetime(forKey: key)
    }

    /// Updates the value for `key` atomically in its shard, giving it `lifetime`.
    public func update<Result>(
        forKey key: Key,
        lifetime: Lifetime?,
        _ body: (inout Value?) throws -> Result
    ) async throws(StorageError) -> Result {
        try await shard(forKey: key).update(forKey: key, lifetime: lifetime, body)
    }

    /// The value for `key` and how long it has left, from its shard.
    public func valueWithLifetime(forKey key: Key) async throws(StorageError) -> (value: Value, lifetime: Lifetime)? {
        try await shard(forKey: key).valueWithLifetime(forKey: key)
    }
}

extension ShardedStorage: ExpiringStorage where Shard: ExpiringStorage {
    /// Removes every shard's expired values, one shard after another, and returns how many
    /// there were.
    public func removeExpired() async throws(StorageError) -> Int {
        var removed = 0
        for shard in shards { removed += try await shard.removeExpired() }
        return removed
    }
}

extension ShardedStorage: EnumerableStorage where Shard: EnumerableStorage {
    /// Lists the keys of every shard, one shard after another.
    public func keys() async throws(StorageError) -> [Key] {
        var keys: [Key] = []
        for shard in shards {
            keys += try await shard.keys()
        }
        return keys
    }
}

extension ShardedStorage: ClearableStorage where Shard: ClearableStorage {
    /// Empties every shard, one after another; a failure leaves the later shards untouched.
    public func removeAll() async throws(StorageError) {
        for shard in shards {
            try await shard.removeAll()
        }
    }
}

/// Returns a storage that spreads `String` keys over `shards` by a stable hash: xxHash64 of the
/// key's UTF-8 bytes in Unicode NFC, so keys Swift considers equal share a shard.
///
/// ```swift
/// let shared = sharded(across: [europe, america, asia])   // three PostgresStorages
/// try await shared.set(profile, forKey: "user:42")         // stored in one of them
/// ```
///
/// Add shards at the end of the list: see ``ShardedStorage`` for what moves.
public func sharded<Shard: KeyValueStorage>(across shards: [Shard]) -> ShardedStorage<Shard>
where Shard.Key == String {
    ShardedStorage(shards: shards, hash: stableHash(of:))
}

/// Returns a storage that spreads keys over `shards` by `hash`, which must give the same value
/// for the same key in every process and on every machine (unlike `Hasher`, which is seeded per
/// process).
public func sharded<Shard: KeyValueStorage>(
    across shards: [Shard],
    hashingKeysWith hash: @escaping @Sendable (Shard.Key) -> UInt64
) -> ShardedStorage<Shard> {
    ShardedStorage(shards: shards, hash: hash)
}

/// xxHash64 of the key's UTF-8 bytes in NFC.
func stableHash(of key: String) -> UInt64 {
    var normalized = key.nfcNormalized
    return normalized.withUTF8 { XXHash64.hash(UnsafeRawBufferPointer($0)) }
}
