import _StrataInternals

/// Orders the writes of each key without making any other key wait: a write of a key waits only
/// for the writes of the same key that began before it, first come first served.
///
/// `PushingStorage` needs it to keep its promise that concurrent writes of one key reach both
/// layers in the same order: the back is never read, so nothing can repair the front afterwards
/// the way `combined`'s ``WriteTracker`` does, and a back that takes no version cannot be written
/// conditionally. Serialising the writes of one key is the least coordination that keeps the
/// promise. Reads never take a turn, writes of other keys never wait, and a write that is waiting
/// for its turn can be cancelled, having written nothing.
///
/// A key has state only while one of its writes is running or waiting: a first-in, first-out
/// ``AsyncSemaphore`` of one permit and a count of the writes using it. Making one costs two
/// allocations. Any task may use it.
@usableFromInline
final class KeyedTurns<Key: Hashable & Sendable>: Sendable {
    private struct Turns {
        let semaphore: AsyncSemaphore
        /// The writes running or waiting: the entry goes when the last of them ends.
        var users: Int
    }

    private let keys = LockedState([Key: Turns]())

    @usableFromInline
    init() {}

    /// Runs `body` once every write of `key` that began before it has ended.
    ///
    /// - Throws: `StorageError.Code.cancelled` (naming `storage`) when the task is cancelled
    ///   while waiting, before `body` runs; otherwise what `body` throws.
    @usableFromInline
    func run<Result>(
        _ key: Key,
        storage: String,
        _ body: () async throws(StorageError) -> Result
    ) async throws(StorageError) -> Result {
        let semaphore = keys.withLock { keys in
            if keys[key] == nil {
                keys[key] = Turns(semaphore: AsyncSemaphore(permits: 1), users: 1)
            } else {
                keys[key]?.users += 1
            }
            return keys[key]!.semaphore
        }
        defer {
            keys.withLock { keys in
                keys[key]?.users -= 1
                if keys[key]?.users == 0 { keys[key] = nil }
            }
        }
        do {
            try await semaphore.acquire()
        } catch {
            throw StorageError(
                .cancelled,
                key: key,
                storage: storage,
                message: "the task was cancelled while its write waited for an earlier write of the same key"
            )
        }
        defer { semaphore.release() }
        return try await body()
    }

    /// The keys that have a write running or waiting, for tests.
    var keysInUse: Int {
        keys.withLock { $0.count }
    }
}
