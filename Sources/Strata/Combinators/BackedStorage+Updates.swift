extension BackedStorage: UpdatableStorage where Front: UpdatableStorage {
    /// Updates `key` atomically in the front: `body` sees the front's value or, when the front
    /// holds none, the value the back supplies, and what it leaves is stored in the front only.
    ///
    /// The back is read before the front's update begins, and its value is used only if the
    /// front still holds nothing then: a value written to the front meanwhile is the one `body`
    /// sees. Setting the value to `nil` removes it from the front; the back, which this storage
    /// never writes, supplies its own again on the next read, as after ``removeValue(forKey:)``.
    @inlinable
    public func update<Result>(
        forKey key: Key,
        _ body: (inout Value?) throws -> Result
    ) async throws(StorageError) -> Result {
        try await write(key) { () throws(StorageError) -> Result in
            let seed = try await front.value(forKey: key) == nil ? try await back.value(forKey: key) : nil
            return try await front.update(forKey: key) { (value: inout Value?) throws -> Result in
                if value == nil { value = seed }
                return try body(&value)
            }
        }
    }
}

extension BackedStorage: LifetimeStorage where Front: LifetimeStorage, Back: LifetimeStorage {
    /// Stores `value` in the front only, expiring after `timeToLive` (the front's default when
    /// `nil`).
    @inlinable
    public func set(_ value: Value, forKey key: Key, timeToLive: Duration?) async throws(StorageError) {
        try await write(key) { () throws(StorageError) in
            try await front.set(value, forKey: key, timeToLive: timeToLive)
        }
    }

    /// How long the value a read of `key` returns has left: the front's, or the back's when the
    /// front holds none.
    @inlinable
    public func lifetime(forKey key: Key) async throws(StorageError) -> Lifetime? {
        if let lifetime = try await front.lifetime(forKey: key) { return lifetime }
        return try await back.lifetime(forKey: key)
    }

    /// Updates `key` atomically in the front, as ``update(forKey:_:)``, giving the result
    /// `lifetime`. With `nil`, a value the front held keeps its lifetime, and a value taken from
    /// the back keeps the back's, so that the copy never outlives what it copies.
    @inlinable
    public func update<Result>(
        forKey key: Key,
        lifetime: Lifetime?,
        _ body: (inout Value?) throws -> Result
    ) async throws(StorageError) -> Result {
        try await write(key) { () throws(StorageError) -> Result in
            let seed = try await front.value(forKey: key) == nil ? try await back.valueWithLifetime(forKey: key) : nil
            return try await front.update(forKey: key, lifetime: lifetime ?? seed?.lifetime) {
                (value: inout Value?) throws -> Result in
                if value == nil { value = seed?.value }
                return try body(&value)
            }
        }
    }
}

extension BackedStorage: ExpiringStorage where Front: ExpiringStorage {
    /// Removes the front's expired values and returns how many there were; the back, which this
    /// storage never writes, keeps its own.
    @inlinable
    public func removeExpired() async throws(StorageError) -> Int {
        try await front.removeExpired()
    }
}
