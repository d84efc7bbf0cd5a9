public import Foundation
public import Observation
public import Strata

/// The live result of a query on an ``ObjectStore``: an `@Observable` list that updates itself
/// when an object that matches (or matched) the query is saved, updated or deleted.
///
/// A SwiftUI view can hold one the way SHELF's `@ShelfQuery` meant to:
///
/// ```swift
/// @State private var unread = messages.liveQuery(matching: #Predicate { !$0.isRead })
/// var body: some View { List(unread.results) { Text($0.content) } }
/// ```
///
/// It follows the store's ``ObjectStore/changes()``: changes made through the store, and those
/// ``ObjectStore/reload()`` finds. It does nothing until one of its properties is first read
/// (SwiftUI evaluates a `@State` property's initial value on every initialisation of the view and
/// keeps the first: the others are never read, so they never query or listen). It lives on the
/// main actor; its listening task ends when it is released.
@MainActor
public final class LiveQuery<Object: Codable & Identifiable & Sendable>: Observable
where Object.ID: Codable & Sendable {
    /// The objects that match, sorted and limited as asked; empty until the first load. Reading
    /// it the first time starts the query.
    public var results: [Object] {
        startIfNeeded()
        registrar.access(self, keyPath: \.results)
        return storedResults
    }

    /// The error of the last refresh, or `nil` when it succeeded.
    public var error: StorageError? {
        startIfNeeded()
        registrar.access(self, keyPath: \.error)
        return storedError
    }

    /// How many times the results have been loaded; 0 until the query starts.
    public var refreshCount: Int {
        registrar.access(self, keyPath: \.refreshCount)
        return storedRefreshCount
    }

    /// Whether the query has started: a property was read, or ``refresh()`` called.
    public var isStarted: Bool { task != nil }

    private let registrar = ObservationRegistrar()
    private var storedResults: [Object] = []
    private var storedError: StorageError?
    private var storedRefreshCount = 0
    private let store: ObjectStore<Object>
    private let predicate: Predicate<Object>?
    private let sortDescriptors: [SortDescriptor<Object>]
    private let limit: Int?
    private var resultIDs: Set<Object.ID> = []
    // Cancelled by deinit; the task holds the query weakly between changes.
    private var task: Task<Void, Never>?

    /// Creates a live query, which starts when first read;
    /// ``ObjectStore/liveQuery(matching:sortedBy:limit:)`` reads better.
    public nonisolated init(
        store: ObjectStore<Object>,
        matching predicate: Predicate<Object>? = nil,
        sortedBy sortDescriptors: [SortDescriptor<Object>] = [],
        limit: Int? = nil
    ) {
        self.store = store
        self.predicate = predicate
        self.sortDescriptors = sortDescriptors
        self.limit = limit
    }

    isolated deinit {
        task?.cancel()
    }

    private func startIfNeeded() {
        guard task == nil else { return }
        // Subscribed before the first load, so no change between the two is missed.
        let changes = store.changes()
        task = Task { [weak self] in
            await self?.load()
            for await change in changes {
                guard let self else { return }
                await self.handle(change)
            }
        }
    }

    /// Runs the query again now, and starts following the store if it had not.
    public func refresh() async {
        startIfNeeded()
        await load()
    }

    private func load() async {
        do throws(StorageError) {
            let objects = try await store.objects(matching: predicate, sortedBy: sortDescriptors, limit: limit)
            registrar.withMutation(of: self, keyPath: \.results) { storedResults = objects }
            resultIDs = Set(objects.map(\.id))
            if storedError != nil { registrar.withMutation(of: self, keyPath: \.error) { storedError = nil } }
        } catch {
            registrar.withMutation(of: self, keyPath: \.error) { storedError = error }
        }
        registrar.withMutation(of: self, keyPath: \.refreshCount) { storedRefreshCount += 1 }
    }

    private func handle(_ change: ObjectChange<Object.ID>) async {
        if resultIDs.contains(change.id) {
            await load()
            return
        }
        guard case .deleted = change else {
            // A new or changed object matters only if it now matches.
            do {
                guard let object = try await store.object(withID: change.id) else { return }
                if let predicate, try !predicate.evaluate(object) { return }
            } catch {
                // An unreadable object or a throwing predicate: let the query report it.
            }
            await load()
            return
        }
    }
}

extension ObjectStore {
    /// Returns a ``LiveQuery`` of the objects that match `predicate`, which updates itself as they
    /// change.
    public func liveQuery(
        matching predicate: Predicate<Object>? = nil,
        sortedBy sortDescriptors: [SortDescriptor<Object>] = [],
        limit: Int? = nil
    ) -> LiveQuery<Object> {
        LiveQuery(store: self, matching: predicate, sortedBy: sortDescriptors, limit: limit)
    }
}
