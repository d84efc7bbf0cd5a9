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
    /// How often the listening connection proves itself alive; see ``beat(every:own:channel:connection:)``.
    let heartbeatInterval: Duration
    /// The beats heard back on the listening connection.
    let beats = BeatLog()

    init(
        memory: MemoryStorage<String, Data>,
        storage: PostgresStorage,
        heartbeatInterval: Duration,
        onInvalidation: (@Sendable (SharedCache.Invalidation) -> Void)?
    ) {
        self.memory = memory
        self.storage = storage
        self.heartbeatInterval = heartbeatInterval
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
                        try await withThrowingTaskGroup(of: Void.self) { group in
                            // Ends with the notifications: the beat's sleep and wait are cancellable.
                            defer { group.cancelAll() }
                            group.addTask {
                                await self.beat(
                                    every: self.heartbeatInterval,
                                    own: own,
                                    channel: channel,
                                    connection: connection
                                )
                            }
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
        // The payload is "<sender> <kind><base64 key>" (see `PostgresChange`), "<sender> *" or
        // "<sender> ready <token>". The
        // sender is another client's `application_name`, which may hold spaces ("my app"); the
        // message after the last space never does, so the payload is read from its end.
        guard let space = payload.lastIndex(of: " ") else { return false }
        let sender = payload[..<space]
        let message = payload[payload.index(after: space)...]
        if sender == "\(own) ready" {
            guard message == token else { return false }
            // Changes may have been missed while not listening.
            invalidate(.all)
            isListening.store(true, ordering: .releasing)
            signalReady.yield()
            return true
        }
        if sender == "\(own) beat" {
            if let number = UInt64(message) { beats.heard(number) }
            return false
        }
        if sender == own {
            return false
        }
        switch PostgresChange(message) {
        case .everyKey: invalidate(.all)
        case .key(let key, _): invalidate(.key(key))
        case nil: break
        }
        return false
    }

    /// After this process's own writes committed: moves the generation, so that a read which
    /// fetched a row before the commit cannot fill memory with it afterwards, and stores each
    /// value only if nothing else moved the generation since `before` (taken before the write was
    /// sent): no other process's change and no other write of this process, which may have
    /// committed after this one and filled memory first. Otherwise, and for a `nil` value (a
    /// removal, or a lifetime that cannot be known), memory drops the key. Returns the keys kept.
    @discardableResult
    func fillAfterOwnWrite(
        _ entries: [(key: String, value: Data?, timeToLive: Duration?)],
        ifUnchangedSince before: UInt64
    ) -> Int {
        fillLock.withLock {
            let now = generation.add(1, ordering: .acquiringAndReleasing).newValue
            let mayFill = now == before &+ 1 && isListening.load(ordering: .acquiring)
            var kept = 0
            for entry in entries {
                if mayFill, let value = entry.value {
                    memory.set(value, forKey: entry.key, timeToLive: entry.timeToLive)
                    kept += 1
                } else {
                    memory.removeValue(forKey: entry.key)
                }
            }
            return kept
        }
    }

    /// After this process removed every value: moves the generation, so that no read that
    /// fetched a row before refills memory with it, and empties memory.
    func emptyAfterOwnRemoval() {
        fillLock.withLock {
            generation.add(1, ordering: .acquiringAndReleasing)
            memory.removeAll()
        }
    }

    /// Proves the listening connection alive every `interval` until cancelled: announces a beat
    /// on `connection` and waits to hear it back there, at most the
    /// shorter of `interval` and one second. NOTIFY delivers in commit order, so a beat heard
    /// back means every change committed before it was sent has been heard too. A beat that does
    /// not come back in time means the connection is silent though open (a half-open TCP
    /// connection sends no reset): memory is bypassed and emptied at once, and the connection
    /// closed, which ends the listen so that the loop reconnects and memory is used again once
    /// the new LISTEN is ready.
    ///
    /// A change committed during a fault is thus served from memory for at most `interval` plus
    /// the wait after the last beat heard before it.
    func beat(every interval: Duration, own: String, channel: String, connection: PostgresConnection) async {
        let wait = min(interval, .seconds(1))
        let storage = storage
        let beats = beats
        var number: UInt64 = 0
        while true {
            do {
                try await Task.sleep(for: interval)
            } catch {
                return  // cancelled: the listen ended
            }
            number += 1
            let expected = number
            let outcome = await Deadline.race(within: wait) { () async throws -> Void in
                // On the listening connection itself: it is the one to prove, and a beat never
                // waits for a connection of the pool that a busy server has lent out.
                _ = try await connection.query(
                    "SELECT pg_notify(\(channel), \(own + " beat " + String(expected)))",
                    logger: PostgresStorage.logger
                )
                try await beats.wait(for: expected)
            }
            switch outcome {
            case .value:
                continue
            case .cancelled:
                return
            case .timedOut, .failure:
                guard !Task.isCancelled else { return }
                isListening.store(false, ordering: .releasing)
                invalidate(.all)
                storage.observer?.log(
                    .warning,
                    "SharedCache heard no heartbeat within \(wait); memory is bypassed until it listens again",
                    reason: "the listening connection is silent",
                    key: nil
                )
                try? await connection.close()
                return
            }
        }
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

/// The highest beat a cache heard back, and the waits for later ones. Any task may use it.
final class BeatLog: Sendable {
    private struct State {
        var highest: UInt64 = 0
        var waiters: [(number: UInt64, continuation: CheckedContinuation<Void, any Error>)] = []
    }

    private let state = LockedState(State())

    /// The highest beat heard back so far.
    var highest: UInt64 {
        state.withLock { $0.highest }
    }

    /// Records that beat `number` came back; resumes the waits for it and earlier ones.
    func heard(_ number: UInt64) {
        let due = state.withLock { state in
            state.highest = max(state.highest, number)
            let due = state.waiters.filter { $0.number <= number }
            state.waiters.removeAll { $0.number <= number }
            return due
        }
        for waiter in due { waiter.continuation.resume() }
    }

    /// Returns once beat `number` came back; throws `CancellationError` when cancelled first.
    func wait(for number: UInt64) async throws {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                // Decided under the lock that cancellation takes too, so no wait is left behind.
                let answer: Result<Void, any Error>? = state.withLock { state in
                    if state.highest >= number { return .success(()) }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    state.waiters.append((number, continuation))
                    return nil
                }
                if let answer { continuation.resume(with: answer) }
            }
        } onCancel: {
            let cancelled = state.withLock { state in
                defer { state.waiters.removeAll { $0.number == number } }
                return state.waiters.filter { $0.number == number }
            }
            for waiter in cancelled { waiter.continuation.resume(throwing: CancellationError()) }
        }
    }
}
#endif
