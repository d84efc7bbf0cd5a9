extension ReadableStorage {
    /// Reads the keys one after another; a value this storage can give at once is read without
    /// suspending.
    @inlinable
    public func values(forKeys keys: [Key]) async throws(StorageError) -> [Value?] {
        var values: [Value?] = []
        values.reserveCapacity(keys.count)
        for key in keys {
            switch try immediateValue(forKey: key) {
            case .found(let value): values.append(value)
            case .absent: values.append(nil)
            case .unavailable: values.append(try await value(forKey: key))
            }
        }
        return values
    }
}

extension ReadableStorage where Key: Hashable {
    /// Returns the values this storage holds for `keys`, by key; a key with no value is left
    /// out. Reads through `values(forKeys:)`, so in one step where the storage can.
    ///
    /// ```swift
    /// let found = try await prices.presentValues(forKeys: ["apple", "pear", "plum"])
    /// let missing = ["apple", "pear", "plum"].filter { found[$0] == nil }
    /// ```
    @inlinable
    public func presentValues(forKeys keys: some Sequence<Key>) async throws(StorageError) -> [Key: Value] {
        let keys = Array(keys)
        let values = try await values(forKeys: keys)
        var found: [Key: Value] = [:]
        found.reserveCapacity(keys.count)
        for (key, value) in zip(keys, values) {
            if let value { found[key] = value }
        }
        return found
    }
}

extension WritableStorage {
    /// Writes the entries one after another.
    @inlinable
    public func setValues(_ entries: [(key: Key, value: Value)]) async throws(StorageError) {
        for entry in entries {
            try await set(entry.value, forKey: entry.key)
        }
    }
}

extension WritableStorage where Key: Hashable {
    /// Stores every value in `values` under its key, through the `setValues(_:)` that takes
    /// entries, so in one step where the storage can.
    ///
    /// ```swift
    /// try await prices.setValues(["apple": 3, "pear": 4])
    /// ```
    @inlinable
    public func setValues(_ values: [Key: Value]) async throws(StorageError) {
        try await setValues(values.map { (key: $0.key, value: $0.value) })
    }
}
