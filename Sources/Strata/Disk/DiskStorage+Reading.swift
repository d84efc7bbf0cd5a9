public import Foundation
import Logging
import _StrataInternals

extension DiskStorage {
    // MARK: Reading

    /// A record read from disk and checked.
    struct Found {
        var header: DiskRecordHeader
        var relativePath: String
        var file: FileBytes
        var payload: Range<Int>
    }

    /// Finds and checks `key`'s file, following hash-collision probes. Damaged files are
    /// removed in cache mode and thrown about in store mode; `stripeHeld` says whether the
    /// caller holds the digest's stripe lock already.
    func find(_ key: String, digest: String, stripeHeld: Bool = false) throws(StorageError) -> Found? {
        var probe = 0
        while true {
            let relativePath = relativePath(digest: digest, probe: probe)
            let file: FileBytes
            do {
                guard let read = try readFile(relativePath) else { return nil }
                file = read
            } catch {
                throw ioError(error, key: key, "cannot read \(absolutePath(relativePath))")
            }
            do {
                let (header, payload) = try DiskRecordHeader.decodeRecord(file.bytes, expectedKey: key)
                if header.key == key {
                    return Found(header: header, relativePath: relativePath, file: file, payload: payload)
                }
                probe += 1
            } catch {
                try handleDamage(error, key: key, digest: digest, relativePath: relativePath, stripeHeld: stripeHeld)
                return nil
            }
        }
    }

    /// Drops a damaged file in cache mode, or reports it in store mode.
    func handleDamage(
        _ error: DiskRecordError,
        key: String,
        digest: String,
        relativePath: String,
        stripeHeld: Bool
    ) throws(StorageError) {
        let path = absolutePath(relativePath)
        guard options.mode == .cache else {
            if case .newerFormat = error {
                throw StorageError(
                    .unsupported,
                    key: key,
                    storage: name,
                    message: "\(path): \(error)",
                    underlying: error
                )
            }
            throw StorageError(.corrupted, key: key, storage: name, message: "\(path): \(error)", underlying: error)
        }
        // Under the stripe lock, so no writer of this digest is between its rename and its index
        // update; and only if the file is still damaged, since a writer may have replaced it.
        let removeIfStillDamaged = {
            guard let current = try? SystemCalls.readFile(path),
                (try? DiskRecordHeader.decodeRecord(current.bytes)) == nil
            else { return }
            var removed = Removed()
            self.state.withLock { state in
                if let owner = state.owners.removeValue(forKey: relativePath) {
                    state.cache.removeValue(forKey: owner, removed: &removed)
                }
            }
            try? self.removeRecordFile(relativePath: relativePath, digest: digest)
        }
        if stripeHeld {
            removeIfStillDamaged()
        } else {
            stripe(for: digest).withLock(removeIfStillDamaged)
        }
        state.withLock { $0.statistics.damagedFiles &+= 1 }
        observer?.log(
            .warning,
            "DiskStorage dropped a damaged file and read it as a miss",
            reason: "\(error)",
            key: key,
            metadata: ["file": "\(path)"]
        )
    }

    /// Returns the value for `key`, or `nil` if there is none or it has expired.
    ///
    /// - Throws: ``StorageError`` code ``StorageError/Code/io`` when the file cannot be read,
    ///   ``StorageError/Code/corrupted`` for a damaged file in store mode,
    ///   ``StorageError/Code/invalidKey`` for a key over 1 MiB.
    public func value(forKey key: String) throws(StorageError) -> Data? {
        let observation = beginObservation()
        defer { endObservation(.get, observation) }
        return try read(key, recordingUse: true)
    }

    /// Returns the bytes stored for `key`, or `nil`, without counting a use: no hit or miss in
    /// the statistics, and no change to the key's recency (its file's access time is left alone),
    /// so reading it does not save it from eviction. For listing what a cache holds.
    ///
    /// - Throws: What `value(forKey:)` throws.
    public func peekValue(forKey key: String) throws(StorageError) -> Data? {
        try read(key, recordingUse: false)
    }

    func read(_ key: String, recordingUse: Bool) throws(StorageError) -> Data? {
        let key = try normalizedKey(key)
        let known = knownFile(forKey: key)
        let found: Found
        // The slot of the file read, when it is the index's: the access is then recorded without
        // looking the key up again.
        var knownSlot: Int?
        if let known, let direct = readKnown(known.relativePath, size: known.size, key: key) {
            found = direct
            knownSlot = known.slot
        } else {
            let digest = known.map { self.digest(fromRelativePath: $0.relativePath) } ?? digest(of: key)
            guard let probed = try find(key, digest: digest) else {
                forgetMissing(key, digest: digest, countingMiss: recordingUse)
                return nil
            }
            found = probed
        }
        let now = now()
        if liveUntil(found.header, modified: found.file.modified) <= now {
            try removeExpired(key, digest: digest(fromRelativePath: found.relativePath), found: found)
            return nil
        }
        let shouldTouch = state.withLock { state -> Bool? in
            guard recordingUse else { return state.cache.index[key] != nil ? false : nil }
            state.statistics.hits &+= 1
            guard let entry = state.cache.recordAccess(forKey: key, slot: knownSlot) else { return nil }
            return now - entry.touched > touchInterval
        }
        switch shouldTouch {
        case true?:
            SystemCalls.touch(absolutePath(found.relativePath), at: now)
            state.withLock { state in
                state.cache.modifyValue(forKey: key) { $0.touched = now }
                if idleTime > 0 { state.cache.renew(forKey: key, expiry: max(found.header.expiry, now + idleTime)) }
            }
        case false?:
            break
        case nil:
            adopt(found, forKey: key, digest: digest(fromRelativePath: found.relativePath))
        }
        return found.file.movingIntoData(found.payload)
    }

    /// The largest file the async `value(forKey:)` reads on its caller's thread when the page
    /// cache holds it: copying and checking it takes at most about 20 µs, less than the hop to an
    /// I/O thread and back costs.
    static let largestReadInPlace = 256 * 1024

    /// `value(forKey:)` for a caller on no actor, answered without a hop when it can be without
    /// waiting for the disk: the key indexed, its file's folders in the kernel's lookup cache and
    /// its bytes in the page cache, the file whole and the key's, the value alive, and no
    /// recency touch due. `nil` when any of that fails; the caller then reads on the I/O threads,
    /// which also deal with damage, expiry and files this process has not indexed.
    func valueInPlace(forKey key: String) -> Data?? {
        // The state's lock only if it is free: a thread that holds it may be doing file I/O (a
        // snapshot, an eviction), and waiting for it here would be waiting for the disk.
        guard let key = try? normalizedKey(key),
            let known = state.withLockIfAvailable({ state in
                state.cache.index[key].flatMap { slot in
                    state.cache.slots[slot].map { ($0.value.relativePath, $0.value.size, slot) }
                }
            }),
            let (relativePath, size, slot) = known,
            size <= Self.largestReadInPlace,
            let file = withAbsolutePath(
                relativePath,
                {
                    // Reads that renew lifetimes need the file's time, which only its status gives.
                    // A file of another size (another process rewrote it) is read again with its
                    // status.
                    idleTime > 0
                        ? SystemCalls.readFileIfCached($0, limit: Self.largestReadInPlace)
                        : SystemCalls.readFileIfCached($0, expectedSize: size)
                            ?? SystemCalls.readFileIfCached($0, limit: Self.largestReadInPlace)
                }
            ),
            let (header, payload) = try? DiskRecordHeader.decodeRecord(file.bytes, expectedKey: key),
            header.key == key
        else { return nil }
        let observation = beginObservation()
        let now = now()
        guard liveUntil(header, modified: file.modified) > now else { return nil }
        let counted = state.withLockIfAvailable { state -> Bool in
            guard slot < state.cache.slots.count, let entry = state.cache.slots[slot], entry.key == key,
                entry.value.relativePath == relativePath, now - entry.value.touched <= touchInterval
            else { return false }
            state.statistics.hits &+= 1
            state.readsInPlace &+= 1
            _ = state.cache.recordAccess(forKey: key, slot: slot)
            return true
        }
        guard counted == true else { return nil }
        endObservation(.get, observation)
        return .some(file.movingIntoData(payload))
    }

    /// How many reads the async `value(forKey:)` answered on its caller's thread.
    package var readsInPlace: Int {
        state.withLock { $0.readsInPlace }
    }

    /// Answers ``ImmediateLookup/unavailable``: every read is file I/O, which an async chain runs
    /// off its caller's thread through the async `value(forKey:)`.
    public func immediateValue(forKey key: String) throws(StorageError) -> ImmediateLookup<Data> {
        .unavailable
    }

    /// The file the index names for `key`, if it holds the key.
    func knownPath(forKey key: String) -> String? {
        knownFile(forKey: key)?.relativePath
    }

    /// The file the index names for `key` and the slot of its entry, if it holds the key.
    func knownFile(forKey key: String) -> (relativePath: String, size: Int, slot: Int)? {
        state.withLock { state in
            state.cache.index[key].flatMap { slot in
                state.cache.slots[slot].map { ($0.value.relativePath, $0.value.size, slot) }
            }
        }
    }

    /// Reads and checks the file the index names for `key`, sparing a read of a known key the
    /// digest and the probing. `nil` when that file is missing, damaged or another key's: the
    /// caller then looks the key up by its digest, which also deals with damage.
    ///
    /// The file is read without asking for its size and times (the index knows its size) unless
    /// reads renew lifetimes, which needs the file's time.
    func readKnown(_ relativePath: String, size: Int, key: String) -> Found? {
        // A file of another size (another process rewrote it) is read again the ordinary way.
        let read =
            idleTime > 0
            ? try? readFile(relativePath)
            : withAbsolutePath(relativePath) { FileBytes.read($0, expectedSize: size) } ?? (try? readFile(relativePath))
        guard let file = read,
            let (header, payload) = try? DiskRecordHeader.decodeRecord(file.bytes, expectedKey: key),
            header.key == key
        else { return nil }
        return Found(header: header, relativePath: relativePath, file: file, payload: payload)
    }

    /// Reads the whole file at `relativePath`, or returns `nil` when there is none.
    func readFile(_ relativePath: String) throws(SystemCallError) -> FileBytes? {
        let outcome = withAbsolutePath(relativePath) { path in
            Result { () throws(SystemCallError) in try SystemCalls.readFile(path) }
        }
        return try outcome.get()
    }

    /// Takes a value read from disk but missing from the index into it: one another process
    /// wrote, or one a writer of this process has renamed into place but not indexed yet.
    func adopt(_ found: Found, forKey key: String, digest: String) {
        var removed = makeRemoved()
        stripe(for: digest).withLock {
            // With the stripe lock, a writer of this process has finished indexing; and a remover
            // or writer may have replaced the file since it was read: index only the file read.
            guard
                let current = try? SystemCalls.readFile(absolutePath(found.relativePath), limit: found.header.size),
                (try? DiskRecordHeader.decode(current.bytes)) == found.header
            else { return }
            state.withLock { state in
                guard state.cache.version(forKey: key, now: -.infinity) == 0 else { return }
                let size = found.file.bytes.count
                // The file's time as just read again: the read may not have asked for it.
                let entry = Entry(relativePath: found.relativePath, size: size, touched: current.modified)
                let expiry = liveUntil(found.header, modified: current.modified)
                state.cache.set(entry, forKey: key, cost: size, expiry: expiry, removed: &removed)
                state.owners[found.relativePath] = key
            }
        }
        evict(removed)
    }

    /// Counts a miss and drops `key` from the index if its file is gone, unless a writer has
    /// stored it again since it was looked for.
    func forgetMissing(_ key: String, digest: String, countingMiss: Bool) {
        let isIndexed = state.withLock { state -> Bool in
            if countingMiss { state.statistics.misses &+= 1 }
            return state.cache.index[key] != nil
        }
        guard isIndexed else { return }
        stripe(for: digest).withLock {
            // With the stripe lock held no writer of this digest is mid-way, so a missing file is
            // really gone.
            let known = state.withLock { state in
                state.cache.index[key].flatMap { state.cache.slots[$0]?.value.relativePath }
            }
            guard let known, !SystemCalls.fileExists(absolutePath(known)) else { return }
            forget(key, countingMiss: false)
        }
    }

    func forget(_ key: String, countingMiss: Bool, cause: RemovalCause = .removed) {
        var removed = makeRemoved()
        state.withLock { state in
            if countingMiss { state.statistics.misses &+= 1 }
            if let entry = state.cache.recordAccess(forKey: key) {
                if state.owners[entry.relativePath] == key { state.owners[entry.relativePath] = nil }
                state.cache.removeValue(forKey: key, cause: cause, removed: &removed)
            }
        }
        publishRemovals(removed)
    }

    /// A collector of the entries an operation removes, which also records their keys and causes
    /// while someone listens.
    func makeRemoved() -> Removed {
        var removed = Removed()
        if removalListeners.isActive || changeListeners.isActive { removed.removals = [] }
        return removed
    }

    /// Hands the removals `removed` recorded to the listeners, each with its file's size, and to
    /// the change listeners. Call it with no lock held.
    func publishRemovals(_ removed: Removed) {
        guard let recorded = removed.removals, !recorded.isEmpty else { return }
        if removalListeners.isActive {
            removalListeners.publish(recorded.map { Removal(key: $0.key, value: $0.value.size, cause: $0.cause) })
        }
        if changeListeners.isActive {
            changeListeners.publish(
                recorded.compactMap { removal in
                    StorageChange.Kind(removal.cause).map { StorageChange(key: removal.key, kind: $0) }
                }
            )
        }
    }

    /// Tells the change listeners that `key` was set, if any listen. Call it with no lock held.
    func publishSet(_ key: String) {
        if changeListeners.isActive { changeListeners.publish([StorageChange(key: key, kind: .set)]) }
    }

    /// What this storage changes from now on: each key set, removed, expired, evicted or cleared,
    /// after its locks are released (see ``ObservableStorage``). Only this storage's own changes
    /// are reported, as for ``removals(bufferingNewest:)``: a write by another process sharing
    /// the folder is not. The storage never waits for a listener: the stream keeps the newest
    /// `limit` changes not read yet.
    public func changes(bufferingNewest limit: Int) -> AsyncStream<StorageChange<String>> {
        changeListeners.subscribe(bufferingNewest: limit)
    }

    /// The values that leave the storage from now on, each with its key, the size of its file
    /// (the value itself is gone with the file) and why it left (``RemovalCause``): expired,
    /// evicted for size or for count, replaced, removed or cleared.
    ///
    /// Only what this storage does is reported: a file another process removes is reported, as
    /// removed, when this storage finds it gone, and a damaged file it drops is logged instead.
    /// Delivery is as for ``MemoryStorage/removals(bufferingNewest:)``: in the order each
    /// operation made them, after the storage's locks are released; the storage never waits for a
    /// listener, whose stream keeps the newest `limit` removals not read yet. While nobody
    /// listens, nothing is collected.
    ///
    /// ```swift
    /// for await removal in disk.removals() where removal.cause == .evictedForSize {
    ///     print("\(removal.key) left, \(removal.value) bytes")
    /// }
    /// ```
    public func removals(bufferingNewest limit: Int = 1_000) -> AsyncStream<Removal<String, Int>> {
        removalListeners.subscribe(bufferingNewest: limit)
    }

    /// Removes the expired file `found` and forgets `key`, unless a writer has replaced the file.
    func removeExpired(_ key: String, digest: String, found: Found) throws(StorageError) {
        let path = absolutePath(found.relativePath)
        try stripe(for: digest).withLock { () throws(StorageError) in
            if let current = try? SystemCalls.readFile(path, limit: found.header.size),
                let header = try? DiskRecordHeader.decode(current.bytes),
                header != found.header
            {
                return
            }
            try removeFile(relativePath: found.relativePath, digest: digest, key: key)
            forget(key, countingMiss: false, cause: .expired)
        }
        state.withLock { state in
            state.statistics.misses &+= 1
            state.cache.statistics.expirations &+= 1
        }
    }

    /// Whether a live value is stored for `key`.
    public func containsValue(forKey key: String) throws(StorageError) -> Bool {
        try value(forKey: key) != nil
    }

    /// The keys of every live value this process knows of (those in its index), in no
    /// particular order.
    public func keys() -> [String] {
        let now = now()
        return state.withLock { $0.cache.liveKeys(now: now) }
    }

    /// What the index knows of one stored value.
    public struct EntryInfo: Sendable, Hashable {
        /// The value's key.
        public var key: String
        /// The size of its file, header included.
        public var size: Int
        /// The size of the value alone: the file's size less its header (56 bytes and the key).
        public var valueSize: Int {
            max(size - DiskRecordHeader.fixedSize - key.utf8.count, 0)
        }
        /// When it was last written or (to within ``Options/recencyResolution``) read.
        public var lastAccess: Date
        /// When it expires, or `nil` for never.
        public var expiry: Date?
        /// The file's path.
        public var path: String
    }

    /// Every live value in the index, least recently used first is not promised: sort as needed.
    /// How long the value for `key` has left, as this instance's index knows it:
    /// ``Lifetime/unlimited``, ``Lifetime/remaining(_:)``, or `nil` when there is no live value.
    /// Reads no file and does not count as a use.
    public func lifetime(forKey key: String) -> Lifetime? {
        let now = now()
        return state.withLock { state -> Lifetime? in
            guard let slot = state.cache.index[key], let entry = state.cache.slots[slot] else { return nil }
            return Lifetime(expiry: entry.expiry, now: now)
        }
    }

    public func entries() -> [EntryInfo] {
        let now = now()
        return state.withLock { state in
            state.cache.slots.compactMap { slot -> EntryInfo? in
                guard let slot, slot.expiry > now else { return nil }
                return EntryInfo(
                    key: slot.key,
                    size: slot.value.size,
                    lastAccess: Date(timeIntervalSince1970: slot.value.touched),
                    expiry: slot.expiry.isFinite ? Date(timeIntervalSince1970: slot.expiry) : nil,
                    path: absolutePath(slot.value.relativePath)
                )
            }
        }
    }

    /// The number of values in the index.
    public var count: Int {
        state.withLock { $0.cache.count }
    }

    /// The bytes taken by the value files in the index, headers included.
    public var totalSize: Int {
        state.withLock { $0.cache.totalCost }
    }

    /// What the storage has done since it was opened.
    public var statistics: StorageStatistics {
        state.withLock { state in
            var statistics = state.statistics
            statistics.countEvictions = state.cache.statistics.countEvictions
            statistics.sizeEvictions = state.cache.statistics.sizeEvictions
            statistics.expirations = state.cache.statistics.expirations
            statistics.rejections = state.cache.statistics.rejections + statistics.rejections
            statistics.count = state.cache.count
            statistics.totalCost = state.cache.totalCost
            return statistics
        }
    }
}
