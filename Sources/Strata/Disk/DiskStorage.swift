public import Foundation
import Logging
import Synchronization

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A storage of `Data` in files: atomic writes, checksummed values, byte and count limits with
/// least-recently-used eviction, and keys that can never name a path outside its folder.
///
/// Each value lives in its own file, named by a 128-bit SHA-256 digest of its key, in one of 256
/// folders made with the store (folders made by earlier versions keep their 16 × 256 layout); the
/// file's header holds the key, times, lengths and checksums, so keys
/// can be listed and damage detected (see `DiskRecord.swift` for the layout). Writes go to a
/// temporary file that is renamed over the old one, so a reader sees the old value or the new one,
/// never a mix, even after `kill -9`. A manifest at the root records the format.
///
/// The index of keys, sizes and recency is built in memory when the folder is opened, from the
/// folder's index snapshot where its value folders have not changed (see `saveIndex()`) and
/// from the files' headers elsewhere; no write scans the folder. Recency survives a restart through the files' modification times, refreshed
/// by reads at most once per ``Options/recencyResolution``.
///
/// Every method comes twice. The synchronous one does its I/O on the calling thread, the caller's
/// choice; the async one (the ``Storage`` protocols') runs it on a few threads of Strata's own,
/// never on the caller's actor or a cooperative-pool thread (see <doc:WhichThreadRunsWhat>).
/// Any task or thread may use it; several processes may share a
/// folder without ever reading a torn or wrong value (each keeps its own index, so limits are
/// enforced per process).
///
/// ```swift
/// let cities = try DiskStorage(folder: "cities", in: .caches).json(City.self)
/// try await cities.set(kharkiv, forKey: "kharkiv")
/// ```
public final class DiskStorage: Sendable {
    /// An entry of the in-memory index.
    struct Entry: Sendable {
        /// The file's path relative to the root, such as `a/bc/abc…`.
        var relativePath: String
        /// The file's size, header included.
        var size: Int
        /// The file's modification time as last set, seconds since 1970.
        var touched: Double
    }

    struct State: Sendable {
        var cache: MemoryCacheState<String, Entry>
        /// Which key owns each file path, to resolve hash collisions without reading files.
        var owners: [String: String] = [:]
        var statistics = Statistics()
        /// Reads the async `value(forKey:)` answered on its caller's thread from the page cache.
        var readsInPlace = 0
        /// The index's change stamp when the last snapshot was saved.
        var savedStamp: UInt64 = 0
        /// Whether a snapshot is being saved in the background.
        var isSaving = false
        /// How the last open built the index: value folders taken from the snapshot, and read.
        var foldersFromSnapshot = 0
        var foldersRead = 0
    }

    typealias Removed = MemoryCacheState<String, Entry>.Removed

    /// The file at the root of every Strata disk folder that names its format: a folder without
    /// it is not one (unless it is empty, when opening it makes it one).
    public static let manifestName = "strata-disk.json"

    /// The folder holding the values.
    public let url: URL
    /// The options the storage was opened with.
    public let options: Options
    let root: String
    /// How value files are spread over folders, as the folder's manifest says.
    let layout: DiskLayout
    let state: LockedState<State>
    /// Writers of keys whose digests share a first byte take the same lock, for the rename and
    /// the index update together; readers never take it.
    private let stripes: [Lock]
    private let temporaryCounter = Atomic<UInt64>(0)
    private let name: String
    /// The logger and metrics of ``Options/logger`` and ``Options/metrics``, or `nil` for neither.
    let observer: StorageObserver?
    /// Who listens to removals (see ``removals(bufferingNewest:)``).
    let removalListeners = RemovalBroadcast<String, Int>()

    /// Opens (creating if needed) the folder `folder` inside `location`.
    ///
    /// - Throws: ``StorageError`` code ``StorageError/Code/invalidConfiguration`` when the folder
    ///   holds files but is not a Strata folder or an option is out of range,
    ///   ``StorageError/Code/unsupported`` when a newer format wrote it, ``StorageError/Code/io``
    ///   when it cannot be created or read. Nothing in the folder is changed on failure.
    public convenience init(
        folder: String,
        in location: Location = .caches,
        options: Options = Options()
    ) throws(StorageError) {
        guard !folder.isEmpty, !folder.split(separator: "/").contains(where: { $0 == ".." }) else {
            throw StorageError(
                .invalidConfiguration,
                storage: "DiskStorage",
                message: "the folder name '\(folder)' is empty or leaves its location"
            )
        }
        try self.init(url: location.url().appendingPathComponent(folder, isDirectory: true), options: options)
    }

    /// Opens (creating if needed) the folder at `url`.
    ///
    /// - Throws: as ``init(folder:in:options:)``.
    public init(url: URL, options: Options = Options()) throws(StorageError) {
        self.url = url
        self.options = options
        self.root = url.standardizedFileURL.path
        self.name = "DiskStorage"
        self.observer = StorageObserver.make(storage: "DiskStorage", logger: options.logger, metrics: options.metrics)
        self.stripes = (0..<64).map { _ in Lock() }
        self.layout = try Self.openManifest(root: root, options: options)
        func invalid(_ message: String) -> StorageError {
            StorageError(.invalidConfiguration, storage: "DiskStorage", message: message)
        }
        if let limit = options.maximumByteCount, limit <= 0 {
            throw invalid("maximumByteCount must be positive, got \(limit)")
        }
        if let limit = options.maximumCount, limit <= 0 {
            throw invalid("maximumCount must be positive, got \(limit)")
        }
        if let timeToLive = options.timeToLive, timeToLive <= .zero {
            throw invalid("timeToLive must be positive, got \(timeToLive)")
        }
        if let expiry = options.expiry {
            if let problem = expiry.configurationProblem(withTimeToLive: options.timeToLive) {
                throw invalid(problem)
            }
            if expiry.afterRead != nil, expiry.idleTime == nil {
                throw invalid(
                    "an Expiry with an afterRead rule would rewrite a file on every read; DiskStorage renews "
                        + "lifetimes on reads only with Expiry.afterAccess, kept in each file's modification time"
                )
            }
        }
        let maximumCount = options.maximumCount ?? .max
        state = LockedState(
            State(
                cache: MemoryCacheState(
                    maximumCount: maximumCount,
                    maximumCost: options.maximumByteCount ?? .max,
                    queue: options.evictionPolicy.makeQueue(
                        capacity: maximumCount,
                        maximumCost: options.maximumByteCount ?? .max
                    )
                )
            )
        )
        try buildIndex()
        endObservation(nil, nil)
        // A large folder read file by file: save a snapshot for the next open.
        if openedFolders.read > 0, count >= Self.snapshotThreshold { saveIndexIfDue(regardlessOfChanges: true) }
    }

    // MARK: Observing

    /// The time an observed operation starts, when metrics are on.
    func beginObservation() -> ContinuousClock.Instant? {
        observer?.measuresTime == true ? ContinuousClock.now : nil
    }

    /// Publishes the statistics and the time `operation` took, if anyone observes.
    func endObservation(_ operation: StorageOperation?, _ start: ContinuousClock.Instant?) {
        guard let observer else { return }
        let snapshot = statistics
        observer.publish(snapshot, now: now())
        if let operation, let start {
            observer.recordDuration(of: operation, since: start)
        }
    }

    // MARK: Names and paths

    /// The key as stored: NFC-normalized, so keys Swift considers equal share one file.
    func normalizedKey(_ key: String) throws(StorageError) -> String {
        // NFC's quick check: text without a code point at or above U+0300 (no UTF-8 byte at or
        // above 0xCC) is already in NFC, and Foundation's normalization costs microseconds.
        let normalized = key.utf8.allSatisfy { $0 < 0xCC } ? key : key.precomposedStringWithCanonicalMapping
        guard normalized.utf8.count <= DiskRecordHeader.maximumKeyLength else {
            throw StorageError(
                .invalidKey,
                key: String(key.prefix(64)) + "…",
                storage: name,
                message: "the key is \(normalized.utf8.count) bytes; at most \(DiskRecordHeader.maximumKeyLength) fit"
            )
        }
        return normalized
    }

    /// The hexadecimal digest naming `key`'s file: 32 characters, 128 bits.
    func digest(of key: String) -> String {
        SHA256.hexadecimal(options.keyDigest?(key) ?? SHA256.hash(key.utf8), byteCount: 16)
    }

    /// The digest a value file's relative path (`di/digest`, `d/ig/digest`, with or without a
    /// `-probe`) names: the key's, without hashing it again.
    func digest(fromRelativePath relativePath: String) -> String {
        let utf8 = relativePath.utf8
        let name = utf8.lastIndex(of: UInt8(ascii: "/")).map(utf8.index(after:)) ?? utf8.startIndex
        return String(Substring(utf8[name...].prefix(32)))
    }

    /// The folder holding the file at `path`: everything before its last `/`.
    func folder(of path: String) -> String {
        let utf8 = path.utf8
        return String(Substring(utf8[..<(utf8.lastIndex(of: UInt8(ascii: "/")) ?? utf8.endIndex)]))
    }

    /// The relative path of probe `probe` for `digest`: `di/digest` or `di/digest-probe`, or in
    /// the nested layout `d/ig/digest` or `d/ig/digest-probe`.
    func relativePath(digest: String, probe: Int) -> String {
        let file = probe == 0 ? digest : "\(digest)-\(probe)"
        var digest = digest
        if layout == .flat {
            return digest.withUTF8 { bytes in
                String(unsafeUninitializedCapacity: 3 + file.utf8.count) { path in
                    path[0] = bytes[0]
                    path[1] = bytes[1]
                    path[2] = UInt8(ascii: "/")
                    _ = UnsafeMutableBufferPointer(rebasing: path[3...]).initialize(from: file.utf8)
                    return 3 + file.utf8.count
                }
            }
        }
        return digest.withUTF8 { bytes in
            String(unsafeUninitializedCapacity: 5 + file.utf8.count) { path in
                path[0] = bytes[0]
                path[1] = UInt8(ascii: "/")
                path[2] = bytes[1]
                path[3] = bytes[2]
                path[4] = UInt8(ascii: "/")
                _ = UnsafeMutableBufferPointer(rebasing: path[5...]).initialize(from: file.utf8)
                return 5 + file.utf8.count
            }
        }
    }

    func absolutePath(_ relativePath: String) -> String {
        root + "/" + relativePath
    }

    private func stripe(for digest: String) -> Lock {
        let byte = digest.utf8.prefix(2).reduce(0) { $0 &* 16 &+ Int(hexValue($1)) }
        return stripes[byte % stripes.count]
    }

    private func hexValue(_ character: UInt8) -> UInt8 {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): character - UInt8(ascii: "a") + 10
        default: 0
        }
    }

    /// Until when the value of a file with `header`, last modified at `modified`, lives: its
    /// header's expiry, or with an idle time, that many seconds after it was last used, if later.
    func liveUntil(_ header: DiskRecordHeader, modified: Double) -> Double {
        idleTime > 0 ? max(header.expiry, modified + idleTime) : header.expiry
    }

    /// The idle time of ``Options/expiry``, in seconds, or 0 when reads do not renew lifetimes.
    var idleTime: Double {
        options.expiry?.idleTime?.timeInterval ?? 0
    }

    /// How long after the last touch of a file a read touches it again: the recency resolution,
    /// or a sixteenth of the idle time when that is shorter.
    var touchInterval: Double {
        let resolution = options.recencyResolution.timeInterval
        return idleTime > 0 ? min(resolution, idleTime / 16) : resolution
    }

    private func now() -> Double {
        options.clock.now().timeIntervalSince1970
    }

    private func ioError(_ error: SystemCallError, key: String?, _ message: String) -> StorageError {
        StorageError(.io, key: key, storage: name, message: "\(message): \(error)", underlying: error)
    }

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
    private func find(_ key: String, digest: String, stripeHeld: Bool = false) throws(StorageError) -> Found? {
        var probe = 0
        while true {
            let relativePath = relativePath(digest: digest, probe: probe)
            let path = absolutePath(relativePath)
            let file: FileBytes
            do {
                guard let read = try SystemCalls.readFile(path) else { return nil }
                file = read
            } catch {
                throw ioError(error, key: key, "cannot read \(path)")
            }
            do {
                let (header, payload) = try DiskRecordHeader.decodeRecord(file.bytes)
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
    private func handleDamage(
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

    private func read(_ key: String, recordingUse: Bool) throws(StorageError) -> Data? {
        let key = try normalizedKey(key)
        let known = knownPath(forKey: key)
        let found: Found
        if let known, let direct = readKnown(known, key: key) {
            found = direct
        } else {
            let digest = known.map(digest(fromRelativePath:)) ?? digest(of: key)
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
            guard let entry = state.cache.recordAccess(forKey: key) else { return nil }
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
        let file = found.file
        let payload = found.payload
        guard !payload.isEmpty, let base = file.buffer.baseAddress else { return Data() }
        return Data(
            bytesNoCopy: base + payload.lowerBound,
            count: payload.count,
            deallocator: .custom { _, _ in withExtendedLifetime(file) {} }
        )
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
                state.cache.index[key].flatMap { state.cache.slots[$0]?.value.relativePath }
            }),
            let relativePath = known,
            let file = SystemCalls.readFileIfCached(absolutePath(relativePath), limit: Self.largestReadInPlace),
            let (header, payload) = try? DiskRecordHeader.decodeRecord(file.bytes),
            header.key == key
        else { return nil }
        let observation = beginObservation()
        let now = now()
        guard liveUntil(header, modified: file.modified) > now else { return nil }
        let counted = state.withLockIfAvailable { state -> Bool in
            guard let slot = state.cache.index[key], let entry = state.cache.slots[slot]?.value,
                entry.relativePath == relativePath, now - entry.touched <= touchInterval
            else { return false }
            state.statistics.hits &+= 1
            state.readsInPlace &+= 1
            _ = state.cache.recordAccess(forKey: key)
            return true
        }
        guard counted == true else { return nil }
        endObservation(.get, observation)
        guard !payload.isEmpty, let base = file.buffer.baseAddress else { return .some(Data()) }
        return .some(
            Data(
                bytesNoCopy: base + payload.lowerBound,
                count: payload.count,
                deallocator: .custom { _, _ in withExtendedLifetime(file) {} }
            )
        )
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
    private func knownPath(forKey key: String) -> String? {
        state.withLock { state in
            state.cache.index[key].flatMap { state.cache.slots[$0]?.value.relativePath }
        }
    }

    /// Reads and checks the file the index names for `key`, sparing a read of a known key the
    /// digest and the probing. `nil` when that file is missing, damaged or another key's: the
    /// caller then looks the key up by its digest, which also deals with damage.
    private func readKnown(_ relativePath: String, key: String) -> Found? {
        guard let file = try? SystemCalls.readFile(absolutePath(relativePath)),
            let (header, payload) = try? DiskRecordHeader.decodeRecord(file.bytes),
            header.key == key
        else { return nil }
        return Found(header: header, relativePath: relativePath, file: file, payload: payload)
    }

    /// Takes a value read from disk but missing from the index into it: one another process
    /// wrote, or one a writer of this process has renamed into place but not indexed yet.
    private func adopt(_ found: Found, forKey key: String, digest: String) {
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
                let entry = Entry(relativePath: found.relativePath, size: size, touched: found.file.modified)
                let expiry = liveUntil(found.header, modified: found.file.modified)
                state.cache.set(entry, forKey: key, cost: size, expiry: expiry, removed: &removed)
                state.owners[found.relativePath] = key
            }
        }
        evict(removed)
    }

    /// Counts a miss and drops `key` from the index if its file is gone, unless a writer has
    /// stored it again since it was looked for.
    private func forgetMissing(_ key: String, digest: String, countingMiss: Bool) {
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

    private func forget(_ key: String, countingMiss: Bool, cause: RemovalCause = .removed) {
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
        if removalListeners.isActive { removed.removals = [] }
        return removed
    }

    /// Hands the removals `removed` recorded to the listeners, each with its file's size. Call it
    /// with no lock held.
    func publishRemovals(_ removed: Removed) {
        guard let recorded = removed.removals, !recorded.isEmpty else { return }
        removalListeners.publish(recorded.map { Removal(key: $0.key, value: $0.value.size, cause: $0.cause) })
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
    private func removeExpired(_ key: String, digest: String, found: Found) throws(StorageError) {
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
    public var statistics: Statistics {
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
        if let limit = options.maximumByteCount, size > limit {
            guard options.mode == .cache else {
                throw StorageError(
                    .capacityExceeded,
                    key: key,
                    storage: name,
                    message: "the value needs \(size) bytes; the limit is \(limit)"
                )
            }
            state.withLock { $0.statistics.rejections &+= 1 }
            try removeValue(forKey: key)
            return
        }
        let encodedHeader = header.encoded()
        var removed = makeRemoved()
        try stripe(for: digest).withLock { () throws(StorageError) in
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
        saveIndexIfDue()
    }

    /// The path `key` is written to: its current file, or the first probe no other key owns.
    /// In store mode, refuses a write that would pass a limit.
    private func claimPath(for key: String, digest: String, addingSize size: Int) throws(StorageError) -> String {
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

    private func write(_ header: [UInt8], _ value: Data, to relativePath: String, key: String) throws(StorageError) {
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

    private func recreateFolders(for folder: String) throws(SystemCallError) {
        let permissions = mode_t(options.folderPermissions)
        try SystemCalls.makeFolders(root, permissions: permissions, durable: options.isDurable)
        if try SystemCalls.readFile(root + "/" + Self.manifestName, limit: 0) == nil {
            try writeManifest()
        }
        try SystemCalls.makeFolders(folder, permissions: permissions, durable: options.isDurable)
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
        try stripe(for: digest).withLock { () throws(StorageError) in
            try removeLocked(key, digest: digest)
        }
        saveIndexIfDue()
    }

    /// Removes `key`'s file and index entry. Call with the digest's stripe lock held, so a writer
    /// storing the key again after this stays indexed.
    private func removeLocked(_ key: String, digest: String) throws(StorageError) {
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
    private func removeFirstDamagedFile(digest: String, key: String) throws(StorageError) {
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
    private func removeFile(relativePath: String, digest: String, key: String) throws(StorageError) {
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
    private func removeRecordFile(relativePath: String, digest: String) throws(SystemCallError) {
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
        for stripe in stripes { stripe.lock() }
        defer { for stripe in stripes { stripe.unlock() } }
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
        let observation = beginObservation()
        defer { endObservation(.update, observation) }
        let key = try normalizedKey(key)
        while true {
            let read = try readForUpdate(key, timeToLive: timeToLive)
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
        fileprivate var timeToLive: Duration?
        var value: Data?
    }

    /// The first half of an update: reads `key` (already normalized) and its live value; the
    /// second half gives the written value `timeToLive` when there is one.
    func readForUpdate(_ key: String, timeToLive: Duration?) throws(StorageError) -> UpdateRead {
        let digest = digest(of: key)
        let before = try find(key, digest: digest)
        let now = now()
        let live = before.flatMap { liveUntil($0.header, modified: $0.file.modified) > now ? $0 : nil }
        let value = live.map { found in Data(found.file.bytes[found.payload]) }
        return UpdateRead(key: key, digest: digest, before: before, now: now, timeToLive: timeToLive, value: value)
    }

    /// The second half of an update: writes `value` (or removes the key for `nil`) if the file is
    /// still the one `read` saw; `false` when another writer got there first.
    func commitUpdate(_ read: UpdateRead, value: Data?) throws(StorageError) -> Bool {
        let (key, digest, before) = (read.key, read.digest, read.before)
        var value = value
        // The rules run before the stripe's lock is taken.
        var ruled: Double?
        if read.timeToLive == nil, let rules = options.expiry, let written = value {
            let replacing = read.value == nil ? nil : before.map { liveUntil($0.header, modified: $0.file.modified) }
            ruled = rules.expiry(of: written, forKey: key, replacing: replacing, now: read.now)
            if ruled == nil { value = nil }
        }
        var removed = makeRemoved()
        let wrote = try stripe(for: digest).withLock { () throws(StorageError) -> Bool in
            let current = try find(key, digest: digest, stripeHeld: true)
            guard current?.header == before?.header else { return false }
            // A time to live that has run out writes nothing: the key is removed instead.
            let value = read.timeToLive.map { $0 <= .zero } == true ? nil : value
            if let value {
                // A value that replaces a live one keeps its expiry unless the update gives one;
                // a new one gets the update's time to live or the default.
                let expiry =
                    if let timeToLive = read.timeToLive { read.now + timeToLive.timeInterval } else if let ruled {
                        ruled
                    } else if read.value != nil {
                        before.map { liveUntil($0.header, modified: $0.file.modified) }
                    } else { Double?.none }
                try setLocked(value, key: key, digest: digest, now: read.now, expiry: expiry, removed: &removed)
            } else if let current {
                try removeFile(relativePath: current.relativePath, digest: digest, key: key)
                forget(key, countingMiss: false)
            }
            return true
        }
        evict(removed)
        saveIndexIfDue()
        return wrote
    }

    func updateAborted(_ error: any Error, key: String) -> StorageError {
        StorageError.wrapping(
            error,
            as: .updateAborted,
            key: key,
            storage: name,
            message: "the update closure threw; nothing was written"
        )
    }

    /// Writes a value with the stripe lock already held.
    private func setLocked(
        _ value: Data,
        key: String,
        digest: String,
        now: Double,
        expiry: Double?,
        removed: inout Removed
    ) throws(StorageError) {
        let header = DiskRecordHeader(
            key: key,
            payloadLength: value.count,
            created: now,
            expiry: expiry ?? options.timeToLive.map { now + $0.timeInterval } ?? .infinity,
            payloadChecksum: DiskRecordHeader.checksum(ofPayload: value)
        )
        let size = header.size + value.count
        if let limit = options.maximumByteCount, size > limit {
            guard options.mode == .cache else {
                throw StorageError(
                    .capacityExceeded,
                    key: key,
                    storage: name,
                    message: "the value needs \(size) bytes; the limit is \(limit)"
                )
            }
            // As `set` does in cache mode: the value is not kept, and neither is the older one.
            state.withLock { $0.statistics.rejections &+= 1 }
            try removeLocked(key, digest: digest)
            return
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
    }
}
