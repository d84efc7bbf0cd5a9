public import Foundation
public import Logging
public import Strata
import _StrataInternals

/// The error codes the object store adds to Strata's.
extension StorageError.Code {
    /// A delete rule (``DeleteRule/deny``) refused to delete an object that others still refer to;
    /// nothing was deleted.
    public static let deleteDenied = StorageError.Code("deleteDenied")
    /// A query's predicate or sort could not be evaluated on an object.
    public static let queryFailed = StorageError.Code("queryFailed")
}

/// A store of `Codable` objects by ID: save, fetch, update atomically, delete, and query with
/// Foundation's `#Predicate` and `SortDescriptor`.
///
/// ```swift
/// struct Message: Codable, Identifiable, Sendable {
///     var id = UUID()
///     var content: String
/// }
/// let messages = try ObjectStore<Message>(folder: "messages", in: .applicationSupport)
/// let greeting = Message(content: "Good morning~")
/// try await messages.save(greeting)
/// try await messages.update(withID: greeting.id) { $0.content.append("!") }
/// let unread = try await messages.objects(matching: #Predicate { $0.content.contains("morning") })
/// ```
///
/// Objects live in an ``ObjectStoreBackend``: by default an ``ObjectFolder`` of JSON files in
/// SHELF's layout, which a person can read; any Strata storage through ``StorageObjectBackend``
/// (memory for tests); or a database.
///
/// **Consistency.** Writes to one ID are serialized, so concurrent ``update(withID:_:)`` calls
/// never lose one another. Queries run over a decoded copy of every object that the store loads
/// on first use and keeps current with its own writes (turn this off with
/// ``Options/keepsObjectsInMemory`` for stores larger than memory). Another process's writes to a
/// shared folder are seen by fetches that go to the backend, and by queries after ``reload()``,
/// which also reports them on ``changes()``. Any task may use a store.
public final class ObjectStore<Object: Codable & Identifiable & Sendable>: Sendable
where Object.ID: Codable & Sendable {
    /// How a store behaves.
    public struct Options: Sendable {
        /// Whether the store keeps a decoded copy of every object once it has loaded them, so
        /// queries need not read and decode every object again. On by default.
        public var keepsObjectsInMemory: Bool
        /// Whether objects are written as indented JSON with sorted keys, for people to read.
        /// On by default; off writes compact JSON.
        public var prettyPrinted: Bool
        /// Whether queries and ``ObjectStore/all()`` skip objects that cannot be read or decoded
        /// instead of failing with their error. Off by default: a damaged object is reported, not
        /// hidden. ``ObjectStore/verify()`` lists them either way.
        public var skipsUnreadableObjects: Bool
        /// The name errors carry; by default the backend's.
        public var name: String?
        /// Where the store reports what a user must hear about and no call returns: an object
        /// skipped because it cannot be read (``skipsUnreadableObjects``), at `.warning`, once per
        /// load. IDs are added only when the logger lets `.debug` through; objects never are.
        /// `nil` (the default) logs nothing.
        public var logger: Logger?

        /// Creates options.
        public init(
            keepsObjectsInMemory: Bool = true,
            prettyPrinted: Bool = true,
            skipsUnreadableObjects: Bool = false,
            name: String? = nil,
            logger: Logger? = nil
        ) {
            self.keepsObjectsInMemory = keepsObjectsInMemory
            self.prettyPrinted = prettyPrinted
            self.skipsUnreadableObjects = skipsUnreadableObjects
            self.name = name
            self.logger = logger
        }
    }

    /// Where the objects live.
    public let backend: any ObjectStoreBackend
    /// How IDs become the keys the backend files objects under.
    public let keyCoding: ObjectKeyCoding<Object.ID>
    /// How the store behaves.
    public let options: Options
    /// The name errors carry.
    public let name: String
    /// JSON with the schema version, for a ``VersionedObject``.
    let coding = ObjectCoding<Object>()

    struct Entry: Sendable {
        var object: Object
        /// A hash of the encoded object, to tell what changed on ``reload()``.
        var fingerprint: UInt64
    }

    struct State: Sendable {
        var snapshot: [String: Entry]?
        var isLoading = false
        var changesDuringLoad: [String: Entry?] = [:]
        var subscribers: [UInt64: AsyncStream<ObjectChange<Object.ID>>.Continuation] = [:]
        var nextSubscriber: UInt64 = 0
        var deleteRules: [DeleteRuleEntry] = []
    }

    let state = LockedState(State())
    /// Serialises the writes to each key, across their awaits.
    private let writes = WriteGate()
    private let loading = AsyncMutex()

    /// Creates a store over `backend`.
    public init(backend: some ObjectStoreBackend, options: Options = Options()) {
        self.backend = backend
        self.options = options
        self.keyCoding = ObjectKeyCoding()
        self.name = options.name ?? "ObjectStore<\(Object.self)>(\(backend.name))"
    }

    /// Opens (creating when needed) a store in the folder at `url`, in SHELF's layout.
    ///
    /// - Throws: what ``ObjectFolder/init(url:options:)`` throws.
    public convenience init(
        url: URL,
        folderOptions: ObjectFolder.Options = ObjectFolder.Options(),
        options: Options = Options()
    ) throws(StorageError) {
        self.init(backend: try ObjectFolder(url: url, options: folderOptions), options: options)
    }

    /// Opens (creating when needed) a store in the folder `name` of a standard location, such as
    /// `ObjectStore<Message>(folder: "messages", in: .applicationSupport)`.
    public convenience init(
        folder name: String,
        in location: DiskStorage.Location,
        folderOptions: ObjectFolder.Options = ObjectFolder.Options(),
        options: Options = Options()
    ) throws(StorageError) {
        self.init(backend: try ObjectFolder(folder: name, in: location, options: folderOptions), options: options)
    }

    /// Creates a store that keeps its objects in memory only, for tests and previews.
    public static func inMemory(options: Options = Options()) -> ObjectStore<Object> {
        ObjectStore(backend: StorageObjectBackend(MemoryStorage<String, Data>(), name: "memory"), options: options)
    }

    deinit {
        let subscribers = state.withLock { $0.subscribers.values }
        for subscriber in subscribers { subscriber.finish() }
    }

    // MARK: - Saving and fetching

    /// Saves `object`, replacing any object with the same ID.
    ///
    /// - Throws: `StorageError.Code.encodingFailed` when it cannot be encoded (nothing is
    ///   written), or the backend's error.
    public func save(_ object: Object) async throws(StorageError) {
        let key = try keyCoding.key(for: object.id)
        let data = try encode(object, key: key)
        try await withStripe(for: key) { () async throws(StorageError) in
            let replaced = try await backend.setRecord(data, forKey: key)
            apply(Entry(object: object, fingerprint: XXHash64.hash(data)), forKey: key)
            publish(replaced ? .updated(object.id) : .inserted(object.id))
        }
    }

    /// Saves every object of `objects`, in order. Stops at the first failure; the objects before
    /// it are saved.
    public func save(contentsOf objects: some Sequence<Object>) async throws(StorageError) {
        for object in objects { try await save(object) }
    }

    /// Returns the object with `id`, or `nil` if there is none.
    ///
    /// - Throws: `StorageError.Code.corrupted` or `StorageError.Code.decodingFailed` naming
    ///   the ID and the file when the object cannot be read as an `Object`.
    public func object(withID id: Object.ID) async throws(StorageError) -> Object? {
        let key = try keyCoding.key(for: id)
        if let snapshot = state.withLock({ $0.snapshot }) {
            return snapshot[key]?.object
        }
        guard let data = try await backend.record(forKey: key) else { return nil }
        return try await decodeOffCaller(data, key: key)
    }

    /// Decodes one object: a small one where the caller is, a large one on Strata's I/O threads.
    func decodeOffCaller(_ data: Data, key: String) async throws(StorageError) -> Object {
        guard data.count >= Self.largeObjectByteCount else { return try decode(data, key: key) }
        return try await BlockingIOPool.shared.run { () throws(StorageError) in try self.decode(data, key: key) }
    }

    /// From this size on, an object is decoded off the caller's executor: about where decoding
    /// takes longer than the hop to another thread and back.
    static var largeObjectByteCount: Int { 16 * 1024 }

    /// Returns the objects with these IDs that exist, in the order of `ids`.
    public func objects(withIDs ids: some Sequence<Object.ID>) async throws(StorageError) -> [Object] {
        var objects: [Object] = []
        for id in ids {
            if let object = try await object(withID: id) { objects.append(object) }
        }
        return objects
    }

    /// Whether an object with `id` exists.
    public func contains(id: Object.ID) async throws(StorageError) -> Bool {
        let key = try keyCoding.key(for: id)
        if let snapshot = state.withLock({ $0.snapshot }) {
            return snapshot[key] != nil
        }
        return try await backend.record(forKey: key) != nil
    }

    /// The number of objects.
    public var count: Int {
        get async throws(StorageError) {
            if let snapshot = state.withLock({ $0.snapshot }) { return snapshot.count }
            return try await backend.keys().count
        }
    }

    /// The IDs of every object, in no particular order.
    public func ids() async throws(StorageError) -> [Object.ID] {
        if let snapshot = state.withLock({ $0.snapshot }) {
            return snapshot.values.map(\.object.id)
        }
        var ids: [Object.ID] = []
        for key in try await backend.keys() { ids.append(try keyCoding.id(forKey: key)) }
        return ids
    }

    /// Every object, in no particular order.
    public func all() async throws(StorageError) -> [Object] {
        try await loadedObjects().values.map(\.object)
    }

    /// Changes the object with `id` atomically within this store: `body` gets the stored object
    /// and its changes are saved, with no other write to this ID through this store in between,
    /// so concurrent updates through it never lose one another. Returns the saved object.
    ///
    /// What is not promised: another `ObjectStore` on the same backend, in this process or
    /// another one sharing the folder or database, is not kept out. Two updates of one ID through
    /// two stores can each read the same object, and the second save then replaces the first's
    /// change (each saved object is still whole, never a mix). Keep one store per backend in a
    /// process, and for read-modify-write across processes use a storage whose `update` is
    /// atomic there: `SQLiteStorage` or `PostgresStorage`.
    ///
    /// `body` may run while other IDs are written; it must not change the object's ID.
    ///
    /// - Throws: `StorageError.Code.notFound` when there is no such object,
    ///   `StorageError.Code.updateAborted` when `body` throws or changes the ID (nothing is
    ///   written), or the errors of ``object(withID:)`` and ``save(_:)``.
    @discardableResult
    public func update(
        withID id: Object.ID,
        _ body: (inout Object) throws -> Void
    ) async throws(StorageError) -> Object {
        let key = try keyCoding.key(for: id)
        return try await withStripe(for: key) { () async throws(StorageError) -> Object in
            guard let data = try await backend.record(forKey: key) else {
                throw StorageError(.notFound, key: key, storage: name, message: "there is no object to update")
            }
            var object = try decode(data, key: key)
            do {
                try body(&object)
            } catch {
                throw StorageError.updateAborted(by: error, key: key, storage: name)
            }
            guard object.id == id else {
                throw StorageError(
                    .updateAborted,
                    key: key,
                    storage: name,
                    message: "the update closure changed the object's ID to \(object.id); nothing was written"
                )
            }
            let updated = try encode(object, key: key)
            try await backend.setRecord(updated, forKey: key)
            apply(Entry(object: object, fingerprint: XXHash64.hash(updated)), forKey: key)
            publish(.updated(id))
            return object
        }
    }

    /// Deletes the object with `id`, applying the delete rules of objects that refer to it (see
    /// `addDeleteRule(_:for:via:)`). Returns whether it existed.
    ///
    /// - Throws: `StorageError.Code.deleteDenied` when a ``DeleteRule/deny`` rule refuses
    ///   (nothing is deleted), or the backend's error.
    @discardableResult
    public func delete(withID id: Object.ID) async throws(StorageError) -> Bool {
        let key = try keyCoding.key(for: id)
        guard try await backend.record(forKey: key) != nil else { return false }
        try await deleteApplyingRules(keys: [key])
        return true
    }

    /// Deletes `object` (by its ID), as ``delete(withID:)`` does.
    @discardableResult
    public func delete(_ object: Object) async throws(StorageError) -> Bool {
        try await delete(withID: object.id)
    }

    /// Deletes every object with one of `ids`, as ``delete(withID:)`` does, with the delete rules
    /// checked for all of them before any is deleted.
    public func delete(withIDs ids: some Sequence<Object.ID>) async throws(StorageError) {
        var keys: Set<String> = []
        for id in ids {
            let key = try keyCoding.key(for: id)
            if try await backend.record(forKey: key) != nil { keys.insert(key) }
        }
        if !keys.isEmpty { try await deleteApplyingRules(keys: keys) }
    }

    /// Deletes every object, applying delete rules.
    public func deleteAll() async throws(StorageError) {
        let keys = Set(try await backend.keys())
        if !keys.isEmpty { try await deleteApplyingRules(keys: keys) }
    }

    // MARK: - Reloading and checking

    /// Reads every object again from the backend, so writes made by other processes are seen, and
    /// reports what changed since the last load on ``changes()``.
    public func reload() async throws(StorageError) {
        guard options.keepsObjectsInMemory else { return }
        await loading.lock()
        defer { loading.unlock() }
        let previous = state.withLock { state in
            state.isLoading = true
            state.changesDuringLoad = [:]
            return state.snapshot
        }
        let loaded: [String: Entry]
        do {
            loaded = try await finishLoading(try await decodeEverything())
        } catch {
            state.withLock { state in
                state.isLoading = false
                state.changesDuringLoad = [:]
            }
            throw error
        }
        guard let previous else { return }
        for (key, entry) in loaded {
            if let old = previous[key] {
                if old.fingerprint != entry.fingerprint { publish(.updated(entry.object.id)) }
            } else {
                publish(.inserted(entry.object.id))
            }
        }
        for (key, entry) in previous where loaded[key] == nil {
            publish(.deleted(entry.object.id))
        }
    }

    /// Reads every object and returns the errors of those that cannot be read or decoded (each
    /// names the ID and the file); an empty list means every object is sound. Changes nothing.
    public func verify() async throws(StorageError) -> [StorageError] {
        var failures: [StorageError] = []
        for record in try await backend.records() {
            do throws(StorageError) {
                _ = try decode(try record.data.get(), key: record.key)
            } catch {
                failures.append(error)
            }
        }
        return failures
    }

    // MARK: - Change stream

    /// A stream of the changes made through this store (and those ``reload()`` finds), from now
    /// on: the ID of each inserted, updated and deleted object, in the order the writes finished
    /// for any one ID. The stream buffers without limit; it ends when the store goes away.
    public func changes() -> AsyncStream<ObjectChange<Object.ID>> {
        let (stream, continuation) = AsyncStream.makeStream(of: ObjectChange<Object.ID>.self)
        let token = state.withLock { state in
            let token = state.nextSubscriber
            state.nextSubscriber += 1
            state.subscribers[token] = continuation
            return token
        }
        continuation.onTermination = { [weak self] _ in
            self?.state.withLock { _ = $0.subscribers.removeValue(forKey: token) }
        }
        return stream
    }

    func publish(_ change: ObjectChange<Object.ID>) {
        let subscribers = state.withLock { Array($0.subscribers.values) }
        for subscriber in subscribers { subscriber.yield(change) }
    }

    // MARK: - Internals

    func withStripe<Result>(
        for key: String,
        _ body: () async throws(StorageError) -> Result
    ) async throws(StorageError) -> Result {
        try await writes.write(writes.stripe(for: key), body)
    }

    /// Records a write in the loaded copy (or in the changes a load in progress must apply).
    func apply(_ entry: Entry?, forKey key: String) {
        guard options.keepsObjectsInMemory else { return }
        state.withLock { state in
            if state.snapshot != nil { state.snapshot?[key] = entry }
            if state.isLoading { state.changesDuringLoad[key] = .some(entry) }
        }
    }

    /// Every object by key, loading them on first use.
    func loadedObjects() async throws(StorageError) -> [String: Entry] {
        if let snapshot = state.withLock({ $0.snapshot }) { return snapshot }
        guard options.keepsObjectsInMemory else { return try await decodeEverything() }
        await loading.lock()
        defer { loading.unlock() }
        if let snapshot = state.withLock({ $0.snapshot }) { return snapshot }
        state.withLock { state in
            state.isLoading = true
            state.changesDuringLoad = [:]
        }
        do {
            return try await finishLoading(try await decodeEverything())
        } catch {
            state.withLock { state in
                state.isLoading = false
                state.changesDuringLoad = [:]
            }
            throw error
        }
    }

    private func finishLoading(_ decoded: [String: Entry]) async throws(StorageError) -> [String: Entry] {
        state.withLock { state in
            var loaded = decoded
            for (key, entry) in state.changesDuringLoad { loaded[key] = entry }
            state.snapshot = loaded
            state.isLoading = false
            state.changesDuringLoad = [:]
            return loaded
        }
    }

    /// Reads every record and decodes it on Strata's I/O threads: decoding a whole store is
    /// work no caller's actor should do.
    private func decodeEverything() async throws(StorageError) -> [String: Entry] {
        let records = try await backend.records()
        return try await BlockingIOPool.shared.run { () throws(StorageError) in try self.decode(records) }
    }

    private func decode(_ records: [ObjectRecord]) throws(StorageError) -> [String: Entry] {
        var entries: [String: Entry] = [:]
        entries.reserveCapacity(records.count)
        for record in records {
            do throws(StorageError) {
                let data = try record.data.get()
                entries[record.key] = Entry(object: try decode(data, key: record.key), fingerprint: XXHash64.hash(data))
            } catch {
                if !options.skipsUnreadableObjects { throw error }
                options.logger?.logStorageEvent(
                    .warning,
                    "ObjectStore skipped an object it cannot read",
                    storage: name,
                    reason: "\(error.code)",
                    key: record.key,
                    metadata: [
                        "location":
                            "\(options.logger?.logLevel ?? .info <= .debug ? backend.location(forKey: record.key) : backend.name)"
                    ]
                )
            }
        }
        return entries
    }

    func encode(_ object: Object, key: String) throws(StorageError) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting =
            options.prettyPrinted
            ? [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
        do {
            return try coding.encode(object, with: encoder)
        } catch {
            throw StorageError(
                .encodingFailed,
                key: key,
                storage: name,
                message: "the object could not be encoded as JSON; nothing was written",
                underlying: error
            )
        }
    }

    func decode(_ data: Data, key: String) throws(StorageError) -> Object {
        try decodeWithVersion(data, key: key).object
    }

    /// Decodes one object, migrating it when it was stored at an older version; returns the
    /// version it was stored at too (`nil` for a type without versions).
    func decodeWithVersion(_ data: Data, key: String) throws(StorageError) -> (object: Object, storedVersion: Int?) {
        do {
            return try coding.decode(data)
        } catch let failure as MigrationFailure {
            throw StorageError(
                .migrationFailed,
                key: key,
                storage: name,
                message:
                    "the object '\(key)' in \(backend.location(forKey: key)) is at version \(failure.storedVersion) and could not be brought to version \(failure.currentVersion): \(failure.reason); it was left in place",
                underlying: failure.underlying
            )
        } catch {
            let location = backend.location(forKey: key)
            var isDamaged = false
            if case DecodingError.dataCorrupted(let context) = error, context.codingPath.isEmpty {
                isDamaged = true
            }
            if isDamaged {
                throw StorageError(
                    .corrupted,
                    key: key,
                    storage: name,
                    message: "the object '\(key)' in \(location) is not valid JSON; it was left in place",
                    underlying: error
                ).carryingUndecodedBytes(of: data)
            }
            throw StorageError(
                .decodingFailed,
                key: key,
                storage: name,
                message:
                    "the object '\(key)' in \(location) does not decode as \(Object.self) (\(Self.describe(error))); it was left in place",
                underlying: error
            ).carryingUndecodedBytes(of: data)
        }
    }

    private static func describe(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "\(error)" }
        func path(_ context: DecodingError.Context) -> String {
            context.codingPath.map(\.stringValue).joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let context):
            let parent = path(context)
            return "missing '\(parent.isEmpty ? key.stringValue : parent + "." + key.stringValue)'"
        case .typeMismatch(let type, let context):
            return "'\(path(context))' is not a \(type)"
        case .valueNotFound(let type, let context):
            return "'\(path(context))' is null, expected \(type)"
        case .dataCorrupted(let context):
            return "'\(path(context))': \(context.debugDescription)"
        @unknown default:
            return "\(error)"
        }
    }
}
