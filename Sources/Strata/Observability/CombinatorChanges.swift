// `changes()` through the combinators that keep keys and read the storage that changed: the
// base's changes are the combination's, so `disk.json(City.self)`, a read-only view and a sharded
// storage can be observed, and hold an `ObservedValue`, as their storages can.
//
// A layered storage is not among them: its back reports a write before the write reaches the
// front, so a listener that reads at once can still find the front's older copy.

extension MappedValuesStorage: ObservableStorage where Base: ObservableStorage {
    /// The base's changes: its keys are this storage's, and a changed value is changed here.
    public func changes(bufferingNewest limit: Int) -> AsyncStream<StorageChange<Key>> {
        base.changes(bufferingNewest: limit)
    }
}

extension ReadOnlyStorage: ObservableStorage where Base: ObservableStorage {
    /// The base's changes, made by whoever writes to it.
    public func changes(bufferingNewest limit: Int) -> AsyncStream<StorageChange<Key>> {
        base.changes(bufferingNewest: limit)
    }
}

extension ShardedStorage: ObservableStorage where Shard: ObservableStorage {
    /// The changes of every shard, merged: each key lives in one shard, so a key's changes
    /// arrive in the order its shard made them; changes to keys in different shards may arrive
    /// in either order. Every shard is listened to from the call on.
    public func changes(bufferingNewest limit: Int) -> AsyncStream<StorageChange<Key>> {
        let streams = shards.map { $0.changes(bufferingNewest: limit) }
        guard streams.count > 1 else { return streams[0] }
        let (merged, continuation) = AsyncStream.makeStream(
            of: StorageChange<Key>.self,
            bufferingPolicy: .bufferingNewest(max(limit, 1))
        )
        let forwarding = Task {
            await withTaskGroup(of: Void.self) { group in
                for stream in streams {
                    group.addTask {
                        for await change in stream { continuation.yield(change) }
                    }
                }
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in forwarding.cancel() }
        return merged
    }
}
