public import Foundation
import Logging
import Synchronization
import _StrataInternals

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
        var cache: CacheIndex<String, Entry>
        /// Which key owns each file path, to resolve hash collisions without reading files.
        var owners: [String: String] = [:]
        var statistics = StorageStatistics()
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

    typealias Removed = CacheIndex<String, Entry>.Removed

    /// The file at the root of every Strata disk folder that names its format: a folder without
    /// it is not one (unless it is empty, when opening it makes it one).
    public static let manifestName = "strata-disk.json"

    /// The folder, at the root beside the manifest, of the files writers lock so that writers in
    /// several processes take turns on a key (see `DiskWriteLocks`). Their contents are empty.
    public static let lockFolderName = "strata-disk.locks"

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
    let stripes: Striped<Lock>
    /// ``idleTime(of:)`` and ``touchInterval(of:)`` of the options, worked out once: every read
    /// needs them.
    let idleTime: Double
    let touchInterval: Double
    let temporaryCounter = Atomic<UInt64>(0)
    let name: String
    /// The logger and metrics of ``Options/logger`` and ``Options/metrics``, or `nil` for neither.
    let observer: StorageObserver?
    /// Who listens to removals (see ``removals(bufferingNewest:)``).
    let removalListeners = RemovalBroadcast<String, Int>()
    /// Who listens to changes (see ``changes(bufferingNewest:)``).
    let changeListeners = Broadcast<StorageChange<String>>()

    /// Opens (creating if needed) the folder `folder` inside `location`.
    ///
    /// A limit or time to live of zero or less, `timeToLive` beside `expiry`, or an `expiry` with an
    /// `afterRead` rule (each read would rewrite a file) is a programmer error: the program stops
    /// with a message that names it, before anything on disk is touched.
    ///
    /// - Throws: ``StorageError`` code ``StorageError/Code/invalidConfiguration`` when the folder
    ///   holds files but is not a Strata folder, or its name or app group cannot be used,
    ///   ``StorageError/Code/corrupted`` when its manifest is damaged,
    ///   ``StorageError/Code/unsupported`` when a newer format or an unknown layout wrote it,
    ///   ``StorageError/Code/io`` when it cannot be created or read. Nothing in the folder is
    ///   changed on failure.
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
        try self.init(
            url: location.url(attributes: options.folderAttributes).appendingPathComponent(folder, isDirectory: true),
            options: options
        )
    }

    /// Opens (creating if needed) the folder at `url`.
    ///
    /// - Throws: as ``init(folder:in:options:)``.
    public init(url: URL, options: Options = Options()) throws(StorageError) {
        ConfigurationRule.requireUsableLimits(
            of: "DiskStorage",
            maximumCount: options.maximumCount,
            maximumCost: options.maximumByteCount,
            timeToLive: options.timeToLive,
            expiry: options.expiry
        )
        if let expiry = options.expiry, expiry.idleTime == nil {
            ConfigurationRule.require(
                expiry.afterRead == nil,
                "an Expiry with an afterRead rule would rewrite a file on every read; DiskStorage renews "
                    + "lifetimes on reads only with Expiry.afterAccess, kept in each file's modification time",
                in: "DiskStorage"
            )
        }
        self.url = url
        self.options = options
        self.idleTime = Self.idleTime(of: options)
        self.touchInterval = Self.touchInterval(of: options)
        self.root = url.standardizedFileURL.path
        self.name = "DiskStorage"
        self.observer = StorageObserver.make(storage: "DiskStorage", logger: options.logger, metrics: options.metrics)
        self.layout = try Self.openManifest(root: root, options: options)
        do {
            try options.folderAttributes.apply(
                protection: options.fileProtection,
                excludedFromBackup: options.isExcludedFromBackup,
                toFolder: root
            )
        } catch {
            throw StorageError(
                .io,
                storage: "DiskStorage",
                message: "cannot protect \(root): \(error)",
                underlying: error
            )
        }
        let maximumCount = options.maximumCount ?? .max
        self.stripes = Striped(count: 64) { Lock() }
        state = LockedState(
            State(
                cache: CacheIndex(
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
        let normalized = key.nfcNormalized
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

    /// Calls `body` with `relativePath`'s absolute path as a C string made on the stack: a path
    /// only handed to the system needs no `String`, nor the copy Swift makes to pass one.
    func withAbsolutePath<Result>(_ relativePath: String, _ body: (UnsafePointer<CChar>) -> Result) -> Result {
        var root = root
        var relativePath = relativePath
        return root.withUTF8 { root in
            relativePath.withUTF8 { relative in
                let count = root.count + 1 + relative.count
                return withUnsafeTemporaryAllocation(of: CChar.self, capacity: count + 1) { path in
                    let base = UnsafeMutableRawPointer(path.baseAddress.unsafelyUnwrapped)
                    if let rootBase = root.baseAddress { base.copyMemory(from: rootBase, byteCount: root.count) }
                    base.storeBytes(of: UInt8(ascii: "/"), toByteOffset: root.count, as: UInt8.self)
                    if let relativeBase = relative.baseAddress {
                        (base + root.count + 1).copyMemory(from: relativeBase, byteCount: relative.count)
                    }
                    base.storeBytes(of: 0, toByteOffset: count, as: UInt8.self)
                    return body(path.baseAddress.unsafelyUnwrapped)
                }
            }
        }
    }

    func absolutePath(_ relativePath: String) -> String {
        .path(root, relativePath)
    }

    func stripe(for digest: String) -> Lock {
        stripes[hash: stripeByte(of: digest)]
    }

    /// Runs `body` holding `digest`'s stripe in this process and in every other process that
    /// writes the folder: what a write that must not interleave with another one takes.
    func withWriteLock<Result, Failure: Error>(
        digest: String,
        _ body: () throws(Failure) -> Result
    ) throws(Failure) -> Result {
        let byte = stripeByte(of: digest)
        return try stripes[hash: byte].withLock { () throws(Failure) -> Result in
            try DiskWriteLocks.withLock(
                root: root,
                stripe: Striping.index(ofHash: byte, count: stripes.all.count),
                options: options,
                body
            )
        }
    }

    /// The digest's first byte, which picks its stripe.
    private func stripeByte(of digest: String) -> Int {
        digest.utf8.prefix(2).reduce(0) { $0 &* 16 &+ Int(hexValue($1)) }
    }

    func hexValue(_ character: UInt8) -> UInt8 {
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

    /// The idle time of `options.expiry`, in seconds, or 0 when reads do not renew lifetimes.
    static func idleTime(of options: Options) -> Double {
        options.expiry?.idleTime?.timeInterval ?? 0
    }

    /// How long after the last touch of a file a read touches it again: the recency resolution,
    /// or a sixteenth of the idle time when that is shorter.
    static func touchInterval(of options: Options) -> Double {
        let resolution = options.recencyResolution.timeInterval
        let idleTime = idleTime(of: options)
        return idleTime > 0 ? min(resolution, idleTime / 16) : resolution
    }

    func now() -> Double {
        options.clock.now().timeIntervalSince1970
    }

    func ioError(_ error: SystemCallError, key: String?, _ message: String) -> StorageError {
        StorageError(.io, key: key, storage: name, message: "\(message): \(error)", underlying: error)
    }
}
