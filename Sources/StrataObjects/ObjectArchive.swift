public import Foundation
public import Strata
import _StrataInternals

/// A size-limited cache of `Codable` objects in memory and on disk, evicting the least recently
/// used: Vellum's `ArchiveManager`.
///
/// ```swift
/// let archive = try ObjectArchive<User>(
///     folder: "users", in: .caches,
///     maximumMemoryByteCount: 10 << 10, maximumDiskByteCount: 20 << 10
/// )
/// try archive.record(user)
/// let same = try archive.object(withID: user.id)
/// try archive.removeObjects(notAccessedWithin: .seconds(7 * 24 * 3600))
/// ```
///
/// A read looks in memory, then on disk, and keeps a disk hit in memory. A write goes to both.
/// Sizes are the objects' encoded JSON bytes (on disk, with each file's header). The archive is a
/// cache: when a limit is reached the least recently accessed objects go, without error, and a
/// damaged file reads as absent. Access times survive a restart. Any task may use an archive.
public final class ObjectArchive<Object: Codable & Identifiable & Sendable>: Sendable
where Object.ID: Codable & Sendable {
    struct Sized: Sendable {
        var object: Object
        var byteCount: Int
    }

    private let memory: MemoryStorage<String, Sized>
    private let disk: DiskStorage
    private let coding = ObjectKeyCoding<Object.ID>()
    private let clock: any StorageClock
    /// When each key was last read or written, including memory hits the disk does not see.
    private let accessTimes = LockedState([String: Date]())

    /// The most bytes kept on disk (Vellum's `maxSize`).
    public let maximumByteCount: Int
    /// The most bytes kept in memory.
    public let maximumMemoryByteCount: Int

    /// Opens (creating when needed) an archive in the folder at `url`.
    ///
    /// A limit of zero or less is a programmer error: the program stops with a message that
    /// names it.
    ///
    /// - Throws: What `DiskStorage` throws when it opens the folder.
    public init(
        url: URL,
        maximumMemoryByteCount: Int = 1 << 20,
        maximumDiskByteCount: Int = 2 << 20,
        clock: any StorageClock = SystemClock()
    ) throws(StorageError) {
        ConfigurationRule.require(
            maximumMemoryByteCount > 0,
            "maximumMemoryByteCount must be positive, got \(maximumMemoryByteCount)",
            in: "ObjectArchive"
        )
        ConfigurationRule.require(
            maximumDiskByteCount > 0,
            "maximumDiskByteCount must be positive, got \(maximumDiskByteCount)",
            in: "ObjectArchive"
        )
        memory = MemoryStorage(
            maximumCost: maximumMemoryByteCount,
            evictionPolicy: .leastRecentlyUsed,
            clock: clock,
            cost: { $0.byteCount }
        )
        var options = DiskStorage.Options(mode: .cache, maximumByteCount: maximumDiskByteCount)
        options.evictionPolicy = .leastRecentlyUsed
        options.clock = clock
        options.recencyResolution = .zero
        disk = try DiskStorage(url: url, options: options)
        self.clock = clock
        self.maximumByteCount = maximumDiskByteCount
        self.maximumMemoryByteCount = maximumMemoryByteCount
    }

    /// Opens (creating when needed) an archive in the folder `name` of a standard location.
    public convenience init(
        folder name: String,
        in location: DiskStorage.Location = .caches,
        maximumMemoryByteCount: Int = 1 << 20,
        maximumDiskByteCount: Int = 2 << 20,
        clock: any StorageClock = SystemClock()
    ) throws(StorageError) {
        try self.init(
            url: location.url().appendingPathComponent(name, isDirectory: true),
            maximumMemoryByteCount: maximumMemoryByteCount,
            maximumDiskByteCount: maximumDiskByteCount,
            clock: clock
        )
    }

    /// The bytes the archive holds on disk (Vellum's `currentSize`).
    public var currentByteCount: Int { disk.totalSize }
    /// The bytes the archive holds in memory.
    public var currentMemoryByteCount: Int { memory.totalCost }
    /// The number of objects on disk.
    public var count: Int { disk.count }

    /// Records `object`, replacing any with the same ID (Vellum's `record` and `update`).
    ///
    /// - Throws: `StorageError.Code.encodingFailed` when it cannot be encoded, or the disk's
    ///   error; an object larger than a limit is simply not kept there.
    public func record(_ object: Object) throws(StorageError) {
        let key = try coding.key(for: object.id)
        let data: Data
        do {
            data = try JSONEncoder().encode(object)
        } catch {
            throw StorageError(
                .encodingFailed,
                key: key,
                storage: "ObjectArchive",
                message: "the object could not be encoded as JSON; nothing was written",
                underlying: error
            )
        }
        try disk.set(data, forKey: key)
        memory.set(Sized(object: object, byteCount: data.count), forKey: key)
        touch(key)
    }

    /// Records every object of `objects`.
    public func record(contentsOf objects: some Sequence<Object>) throws(StorageError) {
        for object in objects { try record(object) }
    }

    /// Returns the object with `id` and marks it accessed, or `nil` (Vellum's `access`).
    public func object(withID id: Object.ID) throws(StorageError) -> Object? {
        let key = try coding.key(for: id)
        if let sized = memory.value(forKey: key) {
            touch(key)
            return sized.object
        }
        guard let data = try disk.value(forKey: key) else { return nil }
        guard let object = try? JSONDecoder().decode(Object.self, from: data) else {
            // A cache drops what it cannot read.
            try disk.removeValue(forKey: key)
            return nil
        }
        memory.set(Sized(object: object, byteCount: data.count), forKey: key)
        touch(key)
        return object
    }

    /// When the object with `id` was last recorded or accessed, or `nil` if it is not held
    /// (Vellum's `latestAccessedTime(for:)`).
    public func lastAccessDate(forID id: Object.ID) -> Date? {
        guard let key = try? coding.key(for: id) else { return nil }
        return lastAccessDates()[key]
    }

    /// Up to `limit` objects, the most recently accessed first, without marking them accessed
    /// (Vellum's `accessAll(limitedBy:)`; no limit gives every object).
    public func objects(limit: Int? = nil) throws(StorageError) -> [Object] {
        let ordered = lastAccessDates().sorted { $0.value > $1.value }.map(\.key)
        var objects: [Object] = []
        for key in ordered {
            if let limit, objects.count >= limit { break }
            if let object = try peek(key) { objects.append(object) }
        }
        return objects
    }

    /// The objects that match `predicate`, sorted, at most `limit`: Vellum's queries.
    public func objects(
        matching predicate: Predicate<Object>,
        sortedBy sortDescriptors: [SortDescriptor<Object>] = [],
        limit: Int? = nil
    ) throws(StorageError) -> [Object] {
        var matches: [Object] = []
        for object in try objects() {
            let isMatch: Bool
            do {
                isMatch = try predicate.evaluate(object)
            } catch {
                throw StorageError(
                    .queryFailed,
                    key: try? coding.key(for: object.id),
                    storage: "ObjectArchive",
                    message: "the predicate threw on this object",
                    underlying: error
                )
            }
            if isMatch { matches.append(object) }
        }
        if !sortDescriptors.isEmpty { matches.sort(using: sortDescriptors) }
        if let limit, matches.count > limit { matches.removeSubrange(limit...) }
        return matches
    }

    /// Deletes the object with `id` (Vellum's `delete(archiveWithKey:)`).
    public func delete(withID id: Object.ID) throws(StorageError) {
        let key = try coding.key(for: id)
        memory.removeValue(forKey: key)
        try disk.removeValue(forKey: key)
        accessTimes.withLock { _ = $0.removeValue(forKey: key) }
    }

    /// Deletes every object (Vellum's `deleteAll()`).
    public func deleteAll() throws(StorageError) {
        memory.removeAll()
        try disk.removeAll()
        accessTimes.withLock { $0.removeAll() }
    }

    /// Deletes every object not recorded or accessed within `interval` of now, and returns how
    /// many went (Vellum's `deleteAllInvalidateArchives(invalidateTimeInterval:)`).
    @discardableResult
    public func removeObjects(notAccessedWithin interval: Duration) throws(StorageError) -> Int {
        let cutoff = clock.now().addingTimeInterval(-interval.timeInterval)
        var removed = 0
        for (key, date) in lastAccessDates() where date < cutoff {
            memory.removeValue(forKey: key)
            try disk.removeValue(forKey: key)
            accessTimes.withLock { _ = $0.removeValue(forKey: key) }
            removed += 1
        }
        return removed
    }

    /// The last access of every object on disk: the later of the disk's record and this
    /// process's memory hits.
    private func lastAccessDates() -> [String: Date] {
        let seen = accessTimes.withLock { $0 }
        var dates: [String: Date] = [:]
        for entry in disk.entries() {
            dates[entry.key] = max(entry.lastAccess, seen[entry.key] ?? .distantPast)
        }
        return dates
    }

    /// Reads an object without marking it accessed, in memory or on disk.
    private func peek(_ key: String) throws(StorageError) -> Object? {
        if let sized = memory.peekValue(forKey: key) { return sized.object }
        guard let data = try disk.peekValue(forKey: key) else { return nil }
        return try? JSONDecoder().decode(Object.self, from: data)
    }

    private func touch(_ key: String) {
        let now = clock.now()
        let count = accessTimes.withLock { times in
            times[key] = now
            return times.count
        }
        // The disk evicts without telling the archive: once the times outnumber the objects
        // twice over, drop those of objects no longer held. Amortized, each touch pays O(1).
        if count > 2 * disk.count + 64 { pruneAccessTimes() }
    }

    /// Forgets the access times of objects the disk no longer holds.
    private func pruneAccessTimes() {
        let held = Set(disk.entries().map(\.key))
        accessTimes.withLock { times in times = times.filter { held.contains($0.key) } }
    }

    /// How many access times the archive keeps; never far above ``count``.
    package var accessTimeCount: Int { accessTimes.withLock { $0.count } }
}
