// `changes()` through the combinators that keep keys as they are: the base's changes are the
// combination's, so `disk.json(City.self)`, `memory.combined(with: disk)` and a sharded storage
// can be observed, and hold an `ObservedValue`, as their storages can.

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

extension CombinedStorage: ObservableStorage where Back: ObservableStorage {
    /// The back's changes: the back holds every value the combination has, and the front only
    /// copies of them, so a front that evicts or expires a copy changes nothing a read returns
    /// (the read falls through to the back) and is not reported.
    public func changes(bufferingNewest limit: Int) -> AsyncStream<StorageChange<Key>> {
        back.changes(bufferingNewest: limit)
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
