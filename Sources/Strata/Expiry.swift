/// How long each value lives, worked out per entry: when it is created, when it is replaced and,
/// optionally, each time it is read.
///
/// Give one to ``MemoryStorage`` or ``DiskStorage`` instead of a single time to live when values
/// should not all live as long: an idle time that each use renews (``afterAccess(_:)``), or a
/// lifetime read from the value itself, such as an HTTP response's `max-age`:
///
/// ```swift
/// struct Response: Sendable {
///     var body: Data
///     var maxAge: Duration?
/// }
///
/// let responses = MemoryStorage<String, Response>(
///     expiry: Expiry { _, response in
///         response.maxAge.map(Lifetime.remaining) ?? .unlimited
///     }
/// )
/// let sessions = MemoryStorage<String, Data>(expiry: .afterAccess(.seconds(900)))
/// ```
///
/// Each rule answers a ``Lifetime``: ``Lifetime/unlimited`` for a value that never expires, or
/// ``Lifetime/remaining(_:)`` for one that expires after that long. A lifetime of zero or less
/// has already run out, as everywhere in Strata: a value created or replaced with one is not
/// stored (and the older value is removed); a value read with one is returned, and expires at
/// once.
///
/// ``MemoryStorage`` and ``DiskStorage`` run the rules without any of their locks held, on the
/// task that reads or writes; the SQLite and PostgreSQL storages run them inside the write's
/// transaction, as they run an update's body, so there a rule must not use the storage. Rules
/// should be quick and must not throw: work out a fallback (the storage's usual lifetime, say)
/// rather than fail a write. A time to live given to one call (`set(_:forKey:timeToLive:)`) is
/// used as it is, and the rules are not asked.
///
/// Where each storage keeps what the rules decide:
///
/// | storage | on writes | on reads |
/// |---|---|---|
/// | ``MemoryStorage`` | every rule | every rule; an idle time costs no closure call |
/// | ``DiskStorage`` | the file's header | an idle time only, in the file's modification time |
/// | SQLite | the row | an idle time only, when a read records its access |
/// | PostgreSQL | the row | none: a read there never writes |
public struct Expiry<Key, Value>: Sendable {
    /// The lifetime of a value stored for a key that had none.
    public let afterCreate: @Sendable (_ key: Key, _ value: Value) -> Lifetime
    /// The lifetime of a value that replaces a live one, given what the old one had left.
    public let afterUpdate: @Sendable (_ key: Key, _ value: Value, _ current: Lifetime) -> Lifetime
    /// The lifetime of a value after it is read, given what it had left, or `nil` when reads
    /// leave lifetimes alone.
    public let afterRead: (@Sendable (_ key: Key, _ value: Value, _ current: Lifetime) -> Lifetime)?
    /// The idle time of ``afterAccess(_:)``, which the storages renew inside their read, without
    /// calling a closure.
    package let idleTime: Duration?

    /// An expiry worked out by your rules.
    ///
    /// - Parameters:
    ///   - afterCreate: The lifetime of a value stored for a key that had no live value.
    ///   - afterUpdate: The lifetime of a value that replaces a live one, given the lifetime the
    ///     old value had left. By default, `afterCreate` decides, so a replaced value starts a
    ///     lifetime of its own, as a new one does.
    ///   - afterRead: The lifetime of a value after each read that counts as a use (not
    ///     `peekValue`, `containsValue` or `lifetime(forKey:)`), given what it had left. By
    ///     default, reads leave lifetimes alone and cost nothing more.
    public init(
        afterCreate: @escaping @Sendable (_ key: Key, _ value: Value) -> Lifetime,
        afterUpdate: (@Sendable (_ key: Key, _ value: Value, _ current: Lifetime) -> Lifetime)? = nil,
        afterRead: (@Sendable (_ key: Key, _ value: Value, _ current: Lifetime) -> Lifetime)? = nil
    ) {
        self.afterCreate = afterCreate
        self.afterUpdate = afterUpdate ?? { key, value, _ in afterCreate(key, value) }
        self.afterRead = afterRead
        self.idleTime = nil
        self.hasUpdateRule = afterUpdate != nil
    }

    private init(idleTime: Duration) {
        self.afterCreate = { _, _ in .remaining(idleTime) }
        self.afterUpdate = { _, _, _ in .remaining(idleTime) }
        self.afterRead = { _, _, _ in .remaining(idleTime) }
        self.idleTime = idleTime
        self.hasUpdateRule = false
    }

    /// Whether ``afterUpdate`` is a rule of its own, which needs the old value's lifetime; when
    /// it is not, a write need not look at the old value first.
    package let hasUpdateRule: Bool

    /// Values expire `idleTime` after they were last written or read: a cache of sessions or
    /// connections that drops what nobody uses. Reads that do not count as a use (`peekValue`,
    /// `containsValue`, `lifetime(forKey:)`) do not renew a value.
    public static func afterAccess(_ idleTime: Duration) -> Expiry {
        Expiry(idleTime: idleTime)
    }

    /// The expiry (seconds on the scale of `now`, infinite for never) of `value` written for
    /// `key` at `now`, new or replacing a value that lived until `replacing`; `nil` when its
    /// lifetime has already run out.
    package func expiry(of value: Value, forKey key: Key, replacing: Double?, now: Double) -> Double? {
        let lifetime =
            if let replacing {
                afterUpdate(key, value, .left(until: replacing, now: now))
            } else {
                afterCreate(key, value)
            }
        return lifetime.expiry(from: now)
    }

    /// Why a storage that keeps lifetimes only as written, and cannot renew them on reads,
    /// cannot take this expiry; `nil` when it can.
    package func problemWithoutReadRules(in storage: String) -> String? {
        guard afterRead != nil else { return nil }
        return "\(storage) cannot renew lifetimes on reads (each read would be a write); give an Expiry "
            + "without an afterRead rule, or put a MemoryStorage with Expiry.afterAccess in front of it"
    }

    /// Why a storage cannot take this expiry with `timeToLive` beside it, or `nil` when it can.
    package func configurationProblem(withTimeToLive timeToLive: Duration?) -> String? {
        if let timeToLive {
            return "give timeToLive (\(timeToLive)) or expiry, not both"
        }
        if let idleTime, idleTime <= .zero {
            return "the idle time of Expiry.afterAccess must be positive, got \(idleTime)"
        }
        return nil
    }
}

extension Lifetime {
    /// The expiry of a value given this lifetime at `now` (seconds on the same scale), or `nil`
    /// when the lifetime has already run out.
    package func expiry(from now: Double) -> Double? {
        switch self {
        case .unlimited: .infinity
        case .remaining(let duration): duration > .zero ? now + duration.timeInterval : nil
        }
    }

    /// The lifetime left at `now` of a value expiring at `expiry`, where a value that has
    /// expired has a lifetime of zero.
    package static func left(until expiry: Double, now: Double) -> Lifetime {
        Lifetime(expiry: expiry, now: now) ?? .remaining(.zero)
    }
}
