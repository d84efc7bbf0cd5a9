public import Foundation
import _StrataInternals

extension DiskStorage {
    // MARK: Updating

    /// Reads the value for `key`, lets `body` change it, and writes the result back atomically
    /// with respect to other writers in this process; setting it to `nil` removes it.
    ///
    /// `body` runs without any lock held; if another writer changed the value meanwhile, `body`
    /// runs again on the newer value, so it should have no side effects. Writers in other
    /// processes are not coordinated with: use a database for cross-process read-modify-write.
    ///
    /// - Throws: ``StorageError/Code/updateAborted`` when `body` throws (nothing is written), or
    ///   any error of `value(forKey:)` and `set(_:forKey:)`.
    @discardableResult
    public func update<Result>(
        forKey key: String,
        _ body: (inout Data?) throws -> Result
    ) throws(StorageError) -> Result {
        try update(forKey: key, timeToLive: nil, body)
    }

    /// `update(forKey:_:)`, giving the value `body` leaves a time to live of its own: with one,
    /// the value expires after it whether it is new or replaces one (zero or less removes the key);
    /// with `nil`, a replaced value keeps its lifetime and a new one gets the default.
    ///
    /// - Throws: as `update(forKey:_:)`.
    @discardableResult
    public func update<Result>(
        forKey key: String,
        timeToLive: Duration?,
        _ body: (inout Data?) throws -> Result
    ) throws(StorageError) -> Result {
        try update(forKey: key, lifetime: timeToLive.map(Lifetime.remaining), body)
    }

    /// `update(forKey:_:)`, giving the value `body` leaves a lifetime of its own: with one, the
    /// value gets it whether it is new or replaces one (``Lifetime/unlimited`` never expires,
    /// whatever the default; zero or less removes the key); with `nil`, a replaced value keeps its
    /// lifetime and a new one gets the default.
    ///
    /// - Throws: as `update(forKey:_:)`.
    @discardableResult
    public func update<Result>(
        forKey key: String,
        lifetime: Lifetime?,
        _ body: (inout Data?) throws -> Result
    ) throws(StorageError) -> Result {
        let observation = beginObservation()
        defer { endObservation(.update, observation) }
        let key = try normalizedKey(key)
        while true {
            let read = try readForUpdate(key, lifetime: lifetime)
            var value = read.value
            let result: Result
            do {
                result = try body(&value)
            } catch {
                throw updateAborted(error, key: key)
            }
            if try commitUpdate(read, value: value) { return result }
        }
    }

    /// What an update read: the file it saw (to check nobody replaced it) and its live value.
    struct UpdateRead: @unchecked Sendable {
        // Safe: the file's bytes are immutable once read, and the value is copied out of them.
        fileprivate var key: String
        fileprivate var digest: String
        fileprivate var before: Found?
        fileprivate var now: Double
        fileprivate var lifetime: Lifetime?
        var value: Data?
    }

    /// The first half of an update: reads `key` (already normalized) and its live value; the
    /// second half gives the written value `lifetime` when there is one.
    func readForUpdate(_ key: String, lifetime: Lifetime?) throws(StorageError) -> UpdateRead {
        let digest = digest(of: key)
        let before = try find(key, digest: digest)
        let now = now()
        let live = before.flatMap { liveUntil($0.header, modified: $0.file.modified) > now ? $0 : nil }
        let value = live.map { found in Data(found.file.bytes[found.payload]) }
        return UpdateRead(key: key, digest: digest, before: before, now: now, lifetime: lifetime, value: value)
    }

    /// The second half of an update: writes `value` (or removes the key for `nil`) if the file is
    /// still the one `read` saw; `false` when another writer got there first.
    func commitUpdate(_ read: UpdateRead, value: Data?) throws(StorageError) -> Bool {
        let (key, digest, before) = (read.key, read.digest, read.before)
        var value = value
        // The rules run before the stripe's lock is taken.
        var ruled: Double?
        if read.lifetime == nil, let rules = options.expiry, let written = value {
            let replacing = read.value == nil ? nil : before.map { liveUntil($0.header, modified: $0.file.modified) }
            ruled = rules.expiry(of: written, forKey: key, replacing: replacing, now: read.now)
            if ruled == nil { value = nil }
        }
        var removed = makeRemoved()
        var stored = false
        let wrote = try withWriteLock(digest: digest) { () throws(StorageError) -> Bool in
            let current = try find(key, digest: digest, stripeHeld: true)
            guard current?.header == before?.header else { return false }
            // A time to live that has run out writes nothing: the key is removed instead.
            let value = read.lifetime?.hasRunOut == true ? nil : value
            if let value {
                // A value that replaces a live one keeps its expiry unless the update gives one;
                // a new one gets the update's time to live or the default.
                let expiry =
                    if let lifetime = read.lifetime { lifetime.expiry(after: read.now) } else if let ruled {
                        ruled
                    } else if read.value != nil {
                        before.map { liveUntil($0.header, modified: $0.file.modified) }
                    } else { Double?.none }
                stored = try setLocked(
                    value,
                    key: key,
                    digest: digest,
                    now: read.now,
                    expiry: expiry,
                    removed: &removed
                )
            } else if let current {
                try removeFile(relativePath: current.relativePath, digest: digest, key: key)
                forget(key, countingMiss: false)
            }
            return true
        }
        evict(removed)
        if stored { publishSet(key) }
        saveIndexIfDue()
        return wrote
    }

    func updateAborted(_ error: any Error, key: String) -> StorageError {
        StorageError.updateAborted(by: error, key: key, storage: name)
    }
}
