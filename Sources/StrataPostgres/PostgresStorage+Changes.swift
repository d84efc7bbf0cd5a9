#if Postgres
import PostgresNIO
public import Strata

extension PostgresStorage: ObservableStorage {
    /// What changes in the table from now on, whoever changes it (this storage, another process,
    /// another machine): each key set, removed, expired (removed by a sweep or ``removeExpired()``
    /// once its lifetime ran out) or cleared (``removeAll()``, or any `TRUNCATE`), in the order
    /// the changes committed (see `ObservableStorage`).
    ///
    /// The stream listens on its own connection to the channel the table's trigger notifies
    /// (``channel``), from a round trip after the call: a change committed before the `LISTEN`
    /// takes effect is not reported. A lost connection is opened again after 100 ms; changes
    /// committed meanwhile are missed, so read again the keys you follow when in doubt. A key of
    /// more than 5,000 bytes is too long for a notification and is not reported (``SharedCache``
    /// then drops every key instead). The stream ends when the storage closes. The storage never
    /// waits for a listener: the stream keeps the newest `limit` changes not read yet.
    ///
    /// ```swift
    /// for await change in shared.changes() where change.kind == .removed {
    ///     print("\(change.key) was removed")
    /// }
    /// ```
    public func changes(bufferingNewest limit: Int) -> AsyncStream<StorageChange<String>> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: StorageChange<String>.self,
            bufferingPolicy: .bufferingNewest(max(limit, 1))
        )
        let listening = Task { [weak self, client, channel] in
            // The storage is not held while listening, so that releasing it stops its client.
            while !Task.isCancelled, self?.isClosed == false {
                do {
                    try await client.withConnection { connection in
                        try await connection.listen(on: channel) { notifications in
                            for try await notification in notifications {
                                if case .key(let key, let kind) = PostgresChange(payload: notification.payload) {
                                    continuation.yield(StorageChange(key: key, kind: kind))
                                }
                            }
                        }
                    }
                } catch {
                    // The connection failed or the storage closed: the loop says which.
                }
                guard !Task.isCancelled else { break }
                try? await Task.sleep(for: .milliseconds(100))
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in listening.cancel() }
        return stream
    }
}
#endif
