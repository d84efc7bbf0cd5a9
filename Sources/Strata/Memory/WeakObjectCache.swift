import _StrataInternals

/// A storage that holds objects weakly: an object stays readable only while something else keeps
/// it alive, so a cache of it costs no memory the app is not already spending.
///
/// Put it in front of a provider chain (``Provider/cache(_:reporting:logger:)``) so that an object
/// already in use anywhere is returned at once. Synchronous and lock-based; any task may use it.
public final class WeakObjectCache<Key: Hashable & Sendable, Object: AnyObject & Sendable>: Sendable {
    private struct WeakBox {
        weak var object: Object?
    }

    private struct State {
        var boxes: [Key: WeakBox] = [:]
        var writesSinceSweep = 0
    }

    private let state = LockedState(State())

    /// Creates an empty cache.
    public init() {}

    /// Returns the object for `key` if it is still alive somewhere.
    public func value(forKey key: Key) -> Object? {
        state.withLock { $0.boxes[key]?.object }
    }

    /// Answers from memory, always: the object if it is alive, or absent.
    public func immediateValue(forKey key: Key) -> ImmediateLookup<Object> {
        ImmediateLookup(value(forKey: key))
    }

    /// Remembers `object` for `key`, weakly.
    public func set(_ object: Object, forKey key: Key) {
        state.withLock { state in
            state.boxes[key] = WeakBox(object: object)
            state.writesSinceSweep += 1
            // Forget released objects now and then, so the table does not grow without bound.
            if state.writesSinceSweep >= max(64, state.boxes.count) {
                state.boxes = state.boxes.filter { $0.value.object != nil }
                state.writesSinceSweep = 0
            }
        }
    }

    /// Forgets the object for `key`.
    public func removeValue(forKey key: Key) {
        _ = state.withLock { $0.boxes.removeValue(forKey: key) }
    }

    /// Forgets every object.
    public func removeAll() {
        state.withLock { $0.boxes.removeAll() }
    }

    /// The number of objects still alive.
    public var count: Int {
        state.withLock { $0.boxes.values.filter { $0.object != nil }.count }
    }
}

extension WeakObjectCache: Storage, ClearableStorage {}
