#if Tracing
public import Strata
public import Tracing

/// A storage that records a span for each operation of the storage under it, through
/// swift-distributed-tracing: made with `traced(as:tracer:)`.
///
/// Each span is named after the operation and the storage (`get MemoryStorage`), is a child of
/// the task's current span, and carries three attributes: `strata.storage` (the name),
/// `strata.operation` (`get`, `set`, `remove`, `update`, `keys`, `removeAll`, `lifetime`) and,
/// for reads, `strata.hit`. Keys and values never reach a span. A failure is recorded on the
/// span with an error status; the error's message (which may name a key) is not.
///
/// Tracing is opt-in and costs nothing where it is not used: storages do not trace themselves,
/// so a chain without `traced` runs exactly as before. Wrap the layers you want to see:
///
/// ```swift
/// let cities = memory.traced(as: "cities.memory").combined(with: disk.traced(as: "cities.disk"))
/// ```
///
/// Any task may use it.
public struct TracedStorage<Base: KeyValueStorage>: KeyValueStorage {
    public typealias Key = Base.Key
    public typealias Value = Base.Value

    /// The storage whose operations are traced.
    public let base: Base
    /// The name spans give the storage.
    public let name: String
    /// The tracer, or `nil` for `InstrumentationSystem.tracer` at each operation.
    public let tracer: (any Tracer)?

    /// Traces `base`'s operations as `name`, with `tracer` or the bootstrapped one.
    public init(_ base: Base, name: String, tracer: (any Tracer)? = nil) {
        self.base = base
        self.name = name
        self.tracer = tracer
    }

    /// Runs `body` inside a span for `operation`; `describe` adds attributes from the result.
    func traced<Result>(
        _ operation: String,
        describe: (Result, any Span) -> Void = { _, _ in },
        _ body: () async throws(StorageError) -> Result
    ) async throws(StorageError) -> Result {
        try await withSpan(startSpan(operation), describe: describe, body)
    }

    func startSpan(_ operation: String) -> any Span {
        StrataTracing.startSpan(
            "\(operation) \(name)",
            tracer: tracer,
            attributes: ["strata.storage": name, "strata.operation": operation]
        )
    }
}

extension TracedStorage: ReadableStorage where Base: ReadableStorage {
    /// The value for `key`, in a `get` span whose `strata.hit` says whether there was one.
    public func value(forKey key: Key) async throws(StorageError) -> Value? {
        let hitOrMiss: (Value?, any Span) -> Void = { value, span in span.attributes["strata.hit"] = value != nil }
        return try await traced("get", describe: hitOrMiss) { () async throws(StorageError) -> Value? in
            try await base.value(forKey: key)
        }
    }

    /// The base's immediate answer, in a `get` span when there is one (a hit or a miss);
    /// no span when the base cannot answer at once, since ``value(forKey:)`` will.
    public func immediateValue(forKey key: Key) throws(StorageError) -> ImmediateLookup<Value> {
        let answer: ImmediateLookup<Value>
        do {
            answer = try base.immediateValue(forKey: key)
        } catch {
            let span = startSpan("get")
            recordFailure(error, on: span)
            span.end()
            throw error
        }
        switch answer {
        case .unavailable:
            break
        case .found, .absent:
            let span = startSpan("get")
            if case .found = answer {
                span.attributes["strata.hit"] = true
            } else {
                span.attributes["strata.hit"] = false
            }
            span.end()
        }
        return answer
    }

    /// The base's values for `keys`, in one `getMany` span that counts the keys
    /// (`strata.keys`) and the hits among them (`strata.hits`).
    public func values(forKeys keys: [Key]) async throws(StorageError) -> [Value?] {
        let counts: ([Value?], any Span) -> Void = { values, span in
            span.attributes["strata.keys"] = keys.count
            span.attributes["strata.hits"] = values.count(where: { $0 != nil })
        }
        return try await traced("getMany", describe: counts) { () async throws(StorageError) -> [Value?] in
            try await base.values(forKeys: keys)
        }
    }
}

extension TracedStorage: WritableStorage where Base: WritableStorage {
    /// Stores `value` for `key`, in a `set` span.
    public func set(_ value: Value, forKey key: Key) async throws(StorageError) {
        try await traced("set") { () async throws(StorageError) in try await base.set(value, forKey: key) }
    }

    /// Removes the value for `key`, in a `remove` span.
    public func removeValue(forKey key: Key) async throws(StorageError) {
        try await traced("remove") { () async throws(StorageError) in try await base.removeValue(forKey: key) }
    }

    /// Stores every value in `entries` through the base's one call, in a `setMany` span that
    /// counts the entries (`strata.keys`).
    public func setValues(_ entries: [(key: Key, value: Value)]) async throws(StorageError) {
        let count: (Void, any Span) -> Void = { _, span in span.attributes["strata.keys"] = entries.count }
        try await traced("setMany", describe: count) { () async throws(StorageError) in
            try await base.setValues(entries)
        }
    }
}

extension TracedStorage: Storage where Base: Storage {}

extension TracedStorage: UpdatableStorage where Base: UpdatableStorage {
    /// Updates the value for `key`, in an `update` span.
    public func update<Result>(
        forKey key: Key,
        _ body: (inout Value?) throws -> Result
    ) async throws(StorageError) -> Result {
        try await traced("update") { () async throws(StorageError) -> Result in
            try await base.update(forKey: key, body)
        }
    }
}

extension TracedStorage: LifetimeStorage where Base: LifetimeStorage {
    /// Stores `value` for `key` with a time to live, in a `set` span.
    public func set(_ value: Value, forKey key: Key, timeToLive: Duration?) async throws(StorageError) {
        try await traced("set") { () async throws(StorageError) in
            try await base.set(value, forKey: key, timeToLive: timeToLive)
        }
    }

    /// How long the value for `key` has left, in a `lifetime` span.
    public func lifetime(forKey key: Key) async throws(StorageError) -> Lifetime? {
        try await traced("lifetime") { () async throws(StorageError) -> Lifetime? in
            try await base.lifetime(forKey: key)
        }
    }

    /// The value for `key` and its lifetime, in a `get` span whose `strata.hit` says whether
    /// there was one.
    public func valueWithLifetime(forKey key: Key) async throws(StorageError) -> (value: Value, lifetime: Lifetime)? {
        let hitOrMiss: ((value: Value, lifetime: Lifetime)?, any Span) -> Void = { found, span in
            span.attributes["strata.hit"] = found != nil
        }
        return try await traced("get", describe: hitOrMiss) {
            () async throws(StorageError) -> (value: Value, lifetime: Lifetime)? in
            try await base.valueWithLifetime(forKey: key)
        }
    }

    /// Updates the value for `key` giving it a lifetime, in an `update` span.
    public func update<Result>(
        forKey key: Key,
        lifetime: Lifetime?,
        _ body: (inout Value?) throws -> Result
    ) async throws(StorageError) -> Result {
        try await traced("update") { () async throws(StorageError) -> Result in
            try await base.update(forKey: key, lifetime: lifetime, body)
        }
    }
}

extension TracedStorage: EnumerableStorage where Base: EnumerableStorage {
    /// Every key with a value, in a `keys` span.
    public func keys() async throws(StorageError) -> [Key] {
        try await traced("keys") { () async throws(StorageError) -> [Key] in try await base.keys() }
    }
}

extension TracedStorage: ClearableStorage where Base: ClearableStorage {
    /// Removes every value, in a `removeAll` span.
    public func removeAll() async throws(StorageError) {
        try await traced("removeAll") { () async throws(StorageError) in try await base.removeAll() }
    }
}

extension TracedStorage: ExpiringStorage where Base: ExpiringStorage {
    /// Removes the base's expired values, in a `removeExpired` span; returns how many there were.
    public func removeExpired() async throws(StorageError) -> Int {
        try await traced("removeExpired") { () async throws(StorageError) -> Int in try await base.removeExpired() }
    }
}

extension KeyValueStorage {
    /// This storage, recording a span for each operation; see ``TracedStorage``.
    ///
    /// - Parameters:
    ///   - name: What spans call the storage; the type's name when `nil`.
    ///   - tracer: The tracer, or `nil` for `InstrumentationSystem.tracer` at each operation.
    public func traced(as name: String? = nil, tracer: (any Tracer)? = nil) -> TracedStorage<Self> {
        TracedStorage(self, name: name ?? tracedName(of: Self.self), tracer: tracer)
    }
}
#endif
