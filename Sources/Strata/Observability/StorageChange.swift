/// What happened to one key of a storage, as `changes()` reports it.
public struct StorageChange<Key> {
    /// What happened.
    public enum Kind: Sendable, Hashable, CustomStringConvertible {
        /// A value was stored: new, or in place of another.
        case set
        /// The value was removed on request (`removeValue`, an update to `nil`, a lifetime of
        /// zero or less).
        case removed
        /// The value's lifetime ran out.
        case expired
        /// The storage evicted the value to keep a limit, or under memory pressure.
        case evicted
        /// `removeAll()` emptied the storage.
        case cleared

        public var description: String {
            switch self {
            case .set: "set"
            case .removed: "removed"
            case .expired: "expired"
            case .evicted: "evicted"
            case .cleared: "cleared"
            }
        }

        /// The change a removal makes, or `nil` for a value replaced by a write, which the write
        /// reports as ``set``.
        @usableFromInline
        init?(_ cause: RemovalCause) {
            switch cause {
            case .expired: self = .expired
            case .evictedForSize, .evictedForCount, .evictedForMemoryPressure: self = .evicted
            case .removed: self = .removed
            case .cleared: self = .cleared
            case .replaced: return nil
            }
        }
    }

    /// The key that changed.
    public var key: Key
    /// What happened to it.
    public var kind: Kind

    /// Creates a change.
    public init(key: Key, kind: Kind) {
        self.key = key
        self.kind = kind
    }
}

extension StorageChange: Sendable where Key: Sendable {}
extension StorageChange: Equatable where Key: Equatable {}
extension StorageChange: Hashable where Key: Hashable {}

/// A storage that tells what changes in it, as it happens: the key and what happened
/// (``StorageChange/Kind``). ``observedValue(forKey:)`` builds an `@Observable` value for one key
/// on it.
///
/// A change is reported after it is made, in the order the storage made it. The storage never
/// waits for a listener: each stream keeps the newest `limit` changes not read yet and drops
/// older ones, so a listener that falls behind misses some (read the key again when in doubt).
/// While nobody listens, nothing is collected.
public protocol ObservableStorage<Key, Value>: ReadableStorage {
    /// The changes made from now on, until the iteration ends or its task is cancelled.
    func changes(bufferingNewest limit: Int) -> AsyncStream<StorageChange<Key>>
}

extension ObservableStorage {
    /// The changes made from now on, keeping at most the newest 1,000 unread.
    public func changes() -> AsyncStream<StorageChange<Key>> {
        changes(bufferingNewest: 1_000)
    }
}
