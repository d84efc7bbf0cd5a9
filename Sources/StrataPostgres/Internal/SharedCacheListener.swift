#if Postgres
import Foundation
import PostgresNIO
import Strata
import Synchronization
import _StrataInternals

/// The state a ``SharedCache``'s listening task works on: the memory to invalidate and whether
/// notifications flow. Any task may use it.
final class SharedCacheListener: Sendable {
    let memory: MemoryStorage<String, Data>
    let storage: PostgresStorage
    /// Bumped by every invalidation, so a read or write that raced one does not refill memory
    /// with the old value. Read with ``fill(_:forKey:timeToLive:ifUnchangedSince:)``'s lock held
    /// where it decides a memory write.
    let generation = Atomic<UInt64>(0)
    /// Makes "the generation has not moved, so store the value" one step against invalidations,
    /// which bump the generation and drop keys under it. Only memory's own (synchronous,
    /// I/O-free) calls run inside it.
    private let fillLock = Lock()
    /// Runs between a write's PostgreSQL commit and its memory write; for tests that deliver
    /// another process's change in that gap.
    let afterCommit: LockedState<(@Sendable (String) async -> Void)?> = LockedState(nil)
    /// Whether the LISTEN is in effect, so memory may be used.
    let isListening = Atomic(false)
    let onInvalidation: (@Sendable (SharedCache.Invalidation) -> Void)?

    init(
        memory: MemoryStorage<String, Data>,
        storage: PostgresStorage,
        onInvalidation: (@Sendable (SharedCache.Invalidation) -> Void)?
    ) {
        self.memory = memory
        self.storage = storage
        self.onInvalidation = onInvalidation
    }

    func listen(signalReady: AsyncStream<Void>.Continuation) async {
        let storage = storage
        let channel = storage.channel
        let token = UUID().uuidString
        let own = storage.instanceName
        // Why the last listening connection ended and how many tries have failed since, while
        // reconnecting; reported once notifications flow again.
        let lost = LockedState<(reason: String, attempts: Int)?>(nil)
        while !Task.isCancelled {
            do {
                try await storage.client.withConnection { connection in
                    try await connection.listen(on: channel) { notifications in
                        // Announce ourselves on the channel: once our own token comes back, the
                        // LISTEN is in effect and no later change can be missed.
                        try await storage.client.query(
                            "SELECT pg_notify(\(channel), \(own + " ready " + token))",
                            logger: PostgresStorage.logger
                        )
                        for try await notification in notifications {
                            let becameReady = handle(
                                notification.payload,
                                own: own,
                                token: token,
                                signalReady: signalReady
                            )
                            if becameReady, let (reason, attempts) = lost.withLock({ $0.take() }) {
                                storage.observer?.recordReconnect(after: reason, attempts: attempts)
                            }
                        }
                    }
                }
            } catch {
                // The connection failed: fall through to forget everything and reconnect.
                let first = lost.withLock { lost in
                    let first = lost == nil
                    lost = (lost?.reason ?? "\(error)", (lost?.attempts ?? 0) + 1)
                    return first
                }
                if first, !Task.isCancelled {
                    storage.observer?.log(
                        .warning,
                        "SharedCache lost its listening connection; memory is bypassed until it reconnects",
                        reason: "\(error)",
                        key: nil
                    )
                }
            }
            isListening.store(false, ordering: .releasing)
            invalidate(.all)
            guard !Task.isCancelled else { break }
            // Pause before reconnecting so a server that is down is not hammered; cancellation
            // (close) ends the pause at once.
            try? await Task.sleep(for: .milliseconds(100))
        }
        signalReady.finish()
    }

    /// Applies one notification; returns whether it was this cache's own "ready" announcement,
    /// after which memory is in use again.
    @discardableResult
    func handle(
        _ payload: String,
        own: String,
        token: String,
        signalReady: AsyncStream<Void>.Continuation
    ) -> Bool {
        guard let space = payload.firstIndex(of: " ") else { return false }
        let sender = payload[..<space]
        let message = payload[payload.index(after: space)...]
        if sender == own {
            if message == "ready \(token)" {
                // Changes may have been missed while not listening.
                invalidate(.all)
                isListening.store(true, ordering: .releasing)
                signalReady.yield()
                return true
            }
            return false
        }
        if message == "*" {
            invalidate(.all)
        } else if message.hasPrefix("k"),
            let bytes = Data(base64Encoded: String(message.dropFirst()), options: .ignoreUnknownCharacters)
        {
            invalidate(.key(String(decoding: bytes, as: UTF8.self)))
        }
        return false
    }

    func invalidate(_ invalidation: SharedCache.Invalidation) {
        fillLock.withLock {
            generation.add(1, ordering: .acquiringAndReleasing)
            switch invalidation {
            case .key(let key): memory.removeValue(forKey: key)
            case .all: memory.removeAll()
            }
        }
        onInvalidation?(invalidation)
    }

    /// The generation to compare against before reading or writing PostgreSQL.
    func snapshot() -> UInt64 {
        generation.load(ordering: .acquiring)
    }

    /// Stores `value` in memory only if no invalidation arrived since `generation` was taken;
    /// otherwise drops the key, since what memory holds for it may be older than the change.
    /// `nil` drops the key. Returns whether the value was stored.
    @discardableResult
    func fill(_ value: Data?, forKey key: String, timeToLive: Duration?, ifUnchangedSince generation: UInt64) -> Bool {
        fillLock.withLock {
            guard let value, self.generation.load(ordering: .acquiring) == generation,
                isListening.load(ordering: .acquiring)
            else {
                memory.removeValue(forKey: key)
                return false
            }
            memory.set(value, forKey: key, timeToLive: timeToLive)
            return true
        }
    }

}
#endif
