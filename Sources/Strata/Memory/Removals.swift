import Synchronization
import _StrataInternals

/// Why a value left a storage, as ``MemoryStorage/removals(bufferingNewest:)`` reports it.
public enum RemovalCause: Sendable, Hashable {
    /// Its lifetime ran out (found on a read, by a sweep or by `removeExpired()`).
    case expired
    /// The eviction policy chose it to keep the total cost within the limit, or it alone cost
    /// more than the limit.
    case evictedForSize
    /// The eviction policy chose it to keep the count within the limit.
    case evictedForCount
    /// The storage gave memory back to the system under pressure (see
    /// ``MemoryPressureResponse``).
    case evictedForMemoryPressure
    /// A write put another value in its place.
    case replaced
    /// It was removed on request (`removeValue`, an update to `nil`, a lifetime of zero or less).
    case removed
    /// `removeAll()` emptied the storage.
    case cleared
}

/// A value that left a storage, with its key and why.
public struct Removal<Key, Value> {
    /// The key it was stored under.
    public var key: Key
    /// The value that left.
    public var value: Value
    /// Why it left.
    public var cause: RemovalCause

    @inlinable
    init(key: Key, value: Value, cause: RemovalCause) {
        self.key = key
        self.value = value
        self.cause = cause
    }
}

extension Removal: Sendable where Key: Sendable, Value: Sendable {}

/// The listeners of a storage's removals.
@usableFromInline
typealias RemovalBroadcast<Key: Sendable, Value: Sendable> = Broadcast<Removal<Key, Value>>

/// The listeners of a stream of events, such as a storage's removals or changes. A storage asks
/// ``isActive`` before collecting events (nothing is collected, and nothing allocated, while
/// nobody listens) and hands what it collected to ``publish(_:)`` once its locks are released.
/// Each listener's buffer keeps the newest events it has not read, so a listener that never reads
/// costs at most its buffer, and the storage never waits for one. Any task may use it.
@usableFromInline
package final class Broadcast<Element: Sendable>: Sendable {
    private let listeners = LockedState<(next: Int, continuations: [Int: AsyncStream<Element>.Continuation])>(
        (0, [:])
    )
    private let active = Atomic(false)

    @usableFromInline
    package init() {}

    /// Whether anyone listens.
    @usableFromInline
    package var isActive: Bool { active.load(ordering: .relaxed) }

    /// How many listen now.
    package var listenerCount: Int {
        listeners.withLock { $0.continuations.count }
    }

    /// A new listener's stream, keeping at most `limit` unread events (the newest).
    package func subscribe(bufferingNewest limit: Int) -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream<Element>.makeStream(bufferingPolicy: .bufferingNewest(max(limit, 1)))
        // The flag changes under the lock, so it always says whether the list is empty.
        let id = listeners.withLock { state in
            defer { state.next += 1 }
            state.continuations[state.next] = continuation
            active.store(true, ordering: .relaxed)
            return state.next
        }
        continuation.onTermination = { [weak self] _ in self?.unsubscribe(id) }
        return stream
    }

    private func unsubscribe(_ id: Int) {
        listeners.withLock { state in
            state.continuations[id] = nil
            if state.continuations.isEmpty { active.store(false, ordering: .relaxed) }
        }
    }

    /// Hands `events` to every listener, in order.
    @usableFromInline
    package func publish(_ events: [Element]) {
        guard !events.isEmpty else { return }
        let continuations = listeners.withLock { Array($0.continuations.values) }
        for continuation in continuations {
            for event in events { continuation.yield(event) }
        }
    }
}
