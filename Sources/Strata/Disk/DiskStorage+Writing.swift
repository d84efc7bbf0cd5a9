public import Foundation
import Logging
import Synchronization
import _StrataInternals

extension DiskStorage {
    // MARK: Writing

    /// Stores `value` for `key` with the default time to live.
    ///
    /// - Throws: ``StorageError`` code ``StorageError/Code/io`` with the system's reason (a full
    ///   disk, a read-only folder), ``StorageError/Code/capacityExceeded`` in store mode when a
    ///   limit would be passed, ``StorageError/Code/invalidKey`` for a key over 1 MiB. On failure
    ///   the old value is left as it was and no partial file remains.
    public func set(_ value: Data, forKey key: String) throws(StorageError) {
        try set(value, forKey: key, timeToLive: nil)
    }

    /// Stores `value` for `key`, expiring after `timeToLive` (or the default when `nil`).
    ///
    /// A `timeToLive` of zero or less has already run out, as on every storage of Strata: the
    /// value is not stored, and the older value for `key` is removed.
    public func set(_ value: Data, forKey key: String, timeToLive: Duration?) throws(StorageError) {
        if let timeToLive, timeToLive <= .zero {
            try removeValue(forKey: key)
            return
        }
        let observation = beginObservation()
        defer { endObservation(.set, observation) }
        let key = try normalizedKey(key)
        let digest = knownPath(forKey: key).map(digest(fromRelativePath:)) ?? digest(of: key)
        let now = now()
        let expiry: Double
        if timeToLive == nil, let rules = options.expiry {
            // The rules run before any lock is taken; the old value's lifetime, which only a rule
            // for replaced values needs, is the index's.
            let replacing =
                rules.hasUpdateRule
                ? state.withLock { $0.cache.expiry(forKey: key) }.flatMap { $0 > now ? $0 : nil } : nil
            guard let ruled = rules.expiry(of: value, forKey: key, replacing: replacing, now: now) else {
                try removeValue(forKey: key)
                return
            }
            expiry = ruled
        } else {
            expiry = (timeToLive ?? options.timeToLive).map { now + $0.timeInterval } ?? .infinity
        }
        let header = DiskRecordHeader(
            key: key,
            payloadLength: value.count,
            created: now,
            expiry: expiry,
            payloadChecksum: DiskRecordHeader.checksum(ofPayload: value)
        )
        let size = header.size + value.count
        guard try admits(size, key: key) else {
            try removeValue(forKey: key)
            return
        }
        let encodedHeader = header.encoded()
        var removed = makeRemoved()
        try withWriteLock(digest: digest) { () throws(StorageError) in
            let relativePath = try claimPath(for: key, digest: digest, addingSize: size)
            try write(encodedHeader, value, to: relativePath, key: key)
            // The idle time runs from the file's modification time, on the storage's clock.
            if idleTime > 0 { SystemCalls.touch(absolutePath(relativePath), at: now) }
            state.withLock { state in
                state.statistics.writes &+= 1
                let entry = Entry(relativePath: relativePath, size: size, touched: now)
                // In cache mode, a new value sweeps for expired ones, whose files `evict` removes
                // below. A store leaves them to reads and `removeExpired()`, which check the file
                // first: another process may have written it again.
                state.cache.set(
                    entry,
                    forKey: key,
                    cost: size,
                    expiry: header.expiry,
                    now: options.mode == .cache ? now : nil,
                    removed: &removed
                )
                state.owners[relativePath] = key
            }
        }
        evict(removed)
        publishSet(key)
        saveIndexIfDue()
    }

    /// The path `key` is written to: its current file, or the first probe no other key owns.
    /// In store mode, refuses a write that would pass a limit.
    func claimPath(for key: String, digest: String, addingSize size: Int) throws(StorageError) -> String {
        try state.withLock { state throws(StorageError) -> String in
            let existing = state.cache.recordAccess(forKey: key)
            if options.mode == .store {
                let count = state.cache.count + (existing == nil ? 1 : 0)
                let total = state.cache.totalCost - (existing?.size ?? 0) + size
                if count > (options.maximumCount ?? .max) || total > (options.maximumByteCount ?? .max) {
                    throw StorageError(
                        .capacityExceeded,
                        key: key,
                        storage: name,
                        message: "the store is full: \(state.cache.count) values, \(state.cache.totalCost) bytes"
                    )
                }
            }
            if let existing { return existing.relativePath }
            var probe = 0
            while true {
                let path = relativePath(digest: digest, probe: probe)
                if let owner = state.owners[path], owner != key {
                    probe += 1
                } else {
                    return path
                }
            }
        }
    }

    func write(_ header: [UInt8], _ value: Data, to relativePath: String, key: String) throws(StorageError) {
        let path = absolutePath(relativePath)
        let folder = folder(of: path)
        let counter = temporaryCounter.add(1, ordering: .relaxed).newValue
        let temporary = "\(folder)/\(TemporaryFiles.name(counter))"
        func attempt() throws(SystemCallError) {
            let result = header.withUnsafeBytes { headerBytes in
                value.withUnsafeBytes { valueBytes in
                    Result { () throws(SystemCallError) in
                        try SystemCalls.writeAtomically(
                            [headerBytes, valueBytes],
                            to: path,
                            temporaryPath: temporary,
                            folder: folder,
                            permissions: mode_t(options.filePermissions),
                            durable: options.isDurable
                        )
                    }
                }
            }
            try result.get()
        }
        do {
            try attempt()
        } catch  where error.isNotFound {
            // The shard folder (or the whole folder) is missing: create it and try once more.
            do {
                try recreateFolders(for: folder)
                try attempt()
            } catch {
                throw ioError(error, key: key, "cannot write \(path)")
            }
        } catch {
            throw ioError(error, key: key, "cannot write \(path)")
        }
    }

    func recreateFolders(for folder: String) throws(SystemCallError) {
        let permissions = mode_t(options.folderPermissions)
        try SystemCalls.makeFolders(root, permissions: permissions, durable: options.isDurable)
        if try SystemCalls.readFile(root + "/" + Self.manifestName, limit: 0) == nil {
            try writeManifest()
            // The folder was made anew: it takes the protection and backup exclusion again.
            try applyFolderAttributes()
        }
        try SystemCalls.makeFolders(folder, permissions: permissions, durable: options.isDurable)
    }

    /// Gives the folder the protection class and backup exclusion of ``Options``, if any.
    func applyFolderAttributes() throws(SystemCallError) {
        try options.folderAttributes.apply(
            protection: options.fileProtection,
            excludedFromBackup: options.isExcludedFromBackup,
            toFolder: root
        )
    }

    /// Removes evicted entries' files, unless a writer has stored the key again meanwhile.
    ///
    /// A file that cannot be removed is counted in ``StorageStatistics/removalFailures``, logged,
    /// and returned; it stays on disk, where a later read or open finds it again.
    @discardableResult
    func evict(_ removed: Removed) -> [(path: String, error: SystemCallError)] {
        publishRemovals(removed)
        var entries = removed.rest
        if let first = removed.first { entries.append(first) }
        var failures: [(path: String, error: SystemCallError)] = []
        for entry in entries {
            let digest = digest(fromRelativePath: entry.relativePath)
            stripe(for: digest).withLock {
                let reclaimed = state.withLock { state -> Bool in
                    guard let owner = state.owners[entry.relativePath] else { return true }
                    if state.cache.version(forKey: owner, now: -.infinity) != 0 { return false }
                    state.owners[entry.relativePath] = nil
                    return true
                }
                if reclaimed {
                    do throws(SystemCallError) {
                        try removeRecordFile(relativePath: entry.relativePath, digest: digest)
                    } catch {
                        failures.append((absolutePath(entry.relativePath), error))
                    }
                }
            }
        }
        if let first = failures.first {
            state.withLock { $0.statistics.removalFailures &+= UInt64(failures.count) }
            observer?.log(
                .warning,
                "DiskStorage could not remove files of values it evicted or that expired",
                reason: "\(first.error)",
                key: nil,
                metadata: ["files": "\(failures.count)", "folder": "\(root)"]
            )
        }
        return failures
    }

    /// Removes the value for `key`, if any.
    ///
    /// - Throws: ``StorageError/Code/io`` when the file cannot be removed.
    public func removeValue(forKey key: String) throws(StorageError) {
        let observation = beginObservation()
        defer { endObservation(.remove, observation) }
        let key = try normalizedKey(key)
        let digest = digest(of: key)
        try withWriteLock(digest: digest) { () throws(StorageError) in
            try removeLocked(key, digest: digest)
        }
        saveIndexIfDue()
    }

    /// Removes `key`'s file and index entry. Call with the digest's stripe lock held, so a writer
    /// storing the key again after this stays indexed.
    func removeLocked(_ key: String, digest: String) throws(StorageError) {
        let known = state.withLock { $0.cache.recordAccess(forKey: key)?.relativePath }
        if let known {
            try removeFile(relativePath: known, digest: digest, key: key)
        } else {
            let found: Found?
            do throws(StorageError) {
                found = try find(key, digest: digest, stripeHeld: true)
            } catch {
                // A store keeps a damaged file, and reads of its key report it, until it is told
                // what to do with it: removing the key is being told.
                guard error.code == .corrupted else { throw error }
                try removeFirstDamagedFile(digest: digest, key: key)
                found = nil
            }
            if let found { try removeFile(relativePath: found.relativePath, digest: digest, key: key) }
        }
        forget(key, countingMiss: false)
    }

    /// Removes the first damaged file of `digest`'s collision chain, the one whose damage stopped a
    /// search for `key`. Call with the digest's stripe lock held.
    func removeFirstDamagedFile(digest: String, key: String) throws(StorageError) {
        var probe = 0
        while true {
            let relativePath = relativePath(digest: digest, probe: probe)
            let file: FileBytes?
            do {
                file = try SystemCalls.readFile(absolutePath(relativePath))
            } catch {
                throw ioError(error, key: key, "cannot read \(absolutePath(relativePath))")
            }
            guard let file else { return }
            if (try? DiskRecordHeader.decodeRecord(file.bytes)) == nil {
                try removeFile(relativePath: relativePath, digest: digest, key: key)
                return
            }
            probe += 1
        }
    }

    /// Removes `key`'s file (see ``removeRecordFile(relativePath:digest:)``), wrapping a failure.
    /// Call with the digest's stripe lock held.
    func removeFile(relativePath: String, digest: String, key: String) throws(StorageError) {
        do {
            try removeRecordFile(relativePath: relativePath, digest: digest)
        } catch {
            throw ioError(error, key: key, "cannot remove \(absolutePath(relativePath))")
        }
    }

    /// The probe number of a value file: 0 for `digest`, `n` for `digest-n`.
    func probe(of relativePath: String) -> Int {
        let name = relativePath.split(separator: "/").last ?? ""
        return name.utf8.count > 33 ? Int(name.dropFirst(33)) ?? 0 : 0
    }

    /// Removes a file the index does not hold (expired, damaged or duplicated when the folder was
    /// opened), keeping its collision chain contiguous; a failure leaves it for the next open.
    func removeDroppedFile(relativePath: String) {
        let digest = digest(fromRelativePath: relativePath)
        stripe(for: digest).withLock {
            try? removeRecordFile(relativePath: relativePath, digest: digest)
        }
    }

    /// Removes one value file and keeps its collision chain contiguous by moving the chain's last
    /// file (and its index entry) into the gap, so a reader probing `digest`, `digest-1`, … finds
    /// every key after it. Every removal goes through here: removing, evicting, expiring and
    /// dropping damage. Call with the digest's stripe lock held.
    func removeRecordFile(relativePath: String, digest: String) throws(SystemCallError) {
        try SystemCalls.remove(absolutePath(relativePath))
        state.withLock { _ = $0.owners.removeValue(forKey: relativePath) }
        let probe = probe(of: relativePath)
        var last = probe
        while SystemCalls.fileExists(absolutePath(self.relativePath(digest: digest, probe: last + 1))) {
            last += 1
        }
        if last > probe {
            let moved = self.relativePath(digest: digest, probe: last)
            try SystemCalls.move(absolutePath(moved), to: absolutePath(relativePath))
            state.withLock { state in
                if let owner = state.owners.removeValue(forKey: moved) {
                    state.owners[relativePath] = owner
                    state.cache.modifyValue(forKey: owner) { $0.relativePath = relativePath }
                }
            }
        }
        if options.isDurable {
            let path = absolutePath(relativePath)
            try SystemCalls.syncFolder(folder(of: path))
        }
    }

    /// Removes every value file in the folder, including ones written by other processes.
    /// Files that are not Strata records are left alone.
    public func removeAll() throws(StorageError) {
        let observation = beginObservation()
        defer { endObservation(.remove, observation) }
        for stripe in stripes.all { stripe.lock() }
        defer { for stripe in stripes.all { stripe.unlock() } }
        do throws(SystemCallError) {
            try forEachRecordFile { (relativePath, _, _) throws(SystemCallError) in
                try SystemCalls.remove(absolutePath(relativePath))
            }
        } catch {
            throw ioError(error, key: nil, "cannot clear \(root)")
        }
        let old = state.withLock { state in
            defer { state.owners.removeAll() }
            return state.cache.removeAll()
        }
        if removalListeners.isActive {
            removalListeners.publish(
                old.compactMap { $0.map { Removal(key: $0.key, value: $0.value.size, cause: .cleared) } }
            )
        }
        if changeListeners.isActive {
            changeListeners.publish(old.compactMap { $0.map { StorageChange(key: $0.key, kind: .cleared) } })
        }
    }

    /// Removes every expired value now rather than when it is next read; returns how many.
    @discardableResult
    public func removeExpired() throws(StorageError) -> Int {
        let observation = beginObservation()
        defer { endObservation(.trim, observation) }
        let now = now()
        var removed = makeRemoved()
        let count = state.withLock { $0.cache.removeExpired(now: now, removed: &removed) }
        evict(removed)
        return count
    }

    /// Evicts least recently used values until the files take at most `byteCount` bytes, and
    /// returns how many values went.
    ///
    /// - Throws: ``StorageError/Code/io`` when a file cannot be removed (a read-only folder, a
    ///   failing disk), naming the first and saying how many; the values it could remove are gone,
    ///   the others stay readable.
    @discardableResult
    public func trim(toByteCount byteCount: Int) throws(StorageError) -> Int {
        let observation = beginObservation()
        defer { endObservation(.trim, observation) }
        var removed = makeRemoved()
        state.withLock { state in
            state.cache.evict(toCount: .max, toCost: max(byteCount, 0), removed: &removed)
        }
        let count = removed.rest.count + (removed.first == nil ? 0 : 1)
        let failures = evict(removed)
        if let first = failures.first {
            throw StorageError(
                .io,
                storage: name,
                message: "could not remove \(failures.count) of \(count) files while trimming \(root) "
                    + "(first \(first.path): \(first.error)); they are still there",
                underlying: first.error
            )
        }
        return count
    }

    /// Writes a value with the stripe lock already held; returns whether it was kept (a value
    /// larger than the byte limit, in cache mode, removes the key instead).
    @discardableResult
    func setLocked(
        _ value: Data,
        key: String,
        digest: String,
        now: Double,
        expiry: Double?,
        removed: inout Removed
    ) throws(StorageError) -> Bool {
        let header = DiskRecordHeader(
            key: key,
            payloadLength: value.count,
            created: now,
            expiry: expiry ?? options.timeToLive.map { now + $0.timeInterval } ?? .infinity,
            payloadChecksum: DiskRecordHeader.checksum(ofPayload: value)
        )
        let size = header.size + value.count
        guard try admits(size, key: key) else {
            try removeLocked(key, digest: digest)
            return false
        }
        let relativePath = try claimPath(for: key, digest: digest, addingSize: size)
        try write(header.encoded(), value, to: relativePath, key: key)
        if idleTime > 0 { SystemCalls.touch(absolutePath(relativePath), at: now) }
        state.withLock { state in
            state.statistics.writes &+= 1
            let entry = Entry(relativePath: relativePath, size: size, touched: now)
            state.cache.set(entry, forKey: key, cost: size, expiry: header.expiry, removed: &removed)
            state.owners[relativePath] = key
        }
        return true
    }

    /// Whether a file of `size` bytes fits the byte limit. In store mode one that does not is
    /// ``StorageError/Code/capacityExceeded``; in cache mode it is counted as a rejection and
    /// the caller removes the older value, as a cache that cannot keep the new one must.
    private func admits(_ size: Int, key: String) throws(StorageError) -> Bool {
        guard let limit = options.maximumByteCount, size > limit else { return true }
        guard options.mode == .cache else {
            throw StorageError(
                .capacityExceeded,
                key: key,
                storage: name,
                message: "the value needs \(size) bytes; the limit is \(limit)"
            )
        }
        state.withLock { $0.statistics.rejections &+= 1 }
        return false
    }
}
