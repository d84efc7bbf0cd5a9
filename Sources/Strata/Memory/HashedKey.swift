/// A key with its hash, computed once: a shard's dictionary finds it without hashing the key
/// again. The cache hashes every key once anyway, to pick its shard and for the eviction
/// policy's sketch; before, `entries[key]` hashed a string key a second time, some 250 of the
/// 1,450 instructions of a read.
@usableFromInline
struct HashedKey<Key: Hashable>: Hashable {
    @usableFromInline let key: Key
    /// `key.hashValue`.
    @usableFromInline let hash: Int

    @inlinable
    init(_ key: Key, hash: Int) {
        self.key = key
        self.hash = hash
    }

    @inlinable
    static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.hash == rhs.hash && lhs.key == rhs.key
    }

    @inlinable
    func hash(into hasher: inout Hasher) {
        hasher.combine(hash)
    }

    /// The hash a dictionary places the key by: the key's own, already spread by `Hasher`,
    /// mixed with the dictionary's seed without hashing it again.
    @inlinable
    func _rawHashValue(seed: Int) -> Int {
        hash ^ seed
    }
}
