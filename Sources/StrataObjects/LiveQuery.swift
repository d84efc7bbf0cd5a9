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
/// ``ObjectStore/reload()`` finds. It lives on the main actor; its listening task ends when it is
/// released.
@MainActor
@Observable
public final class LiveQuery<Object: Codable & Identifiable & Sendable> where Object.ID: Codable & Sendable {
    /// The objects that match, sorted and limited as asked; empty until the first load.
    public private(set) var results: [Object] = []
    /// The error of the last refresh, or `nil` when it succeeded.
    public private(set) var error: StorageError?
    /// How many times the results have been loaded.
    public private(set) var refreshCount = 0

    @ObservationIgnored private let store: ObjectStore<Object>
    @ObservationIgnored private let predicate: Predicate<Object>?
    @ObservationIgnored private let sortDescriptors: [SortDescriptor<Object>]
    @ObservationIgnored private let limit: Int?
    @ObservationIgnored private var resultIDs: Set<Object.ID> = []
    // Cancelled by deinit; the task holds the query weakly between changes.
    @ObservationIgnored private var task: Task<Void, Never>?

    /// Starts a live query; ``ObjectStore/liveQuery(matching:sortedBy:limit:)`` reads better.
    public init(
        store: ObjectStore<Object>,
        matching predicate: Predicate<Object>? = nil,
        sortedBy sortDescriptors: [SortDescriptor<Object>] = [],
        limit: Int? = nil
    ) {
        self.store = store
        self.predicate = predicate
        self.sortDescriptors = sortDescriptors
        self.limit = limit
        let changes = store.changes()
        task = Task { [weak self] in
            await self?.refresh()
            for await change in changes {
                guard let self else { return }
                await self.handle(change)
            }
        }
    }

    isolated deinit {
        task?.cancel()
    }

    /// Runs the query again now.
    public func refresh() async {
        do throws(StorageError) {
            let objects = try await store.objects(matching: predicate, sortedBy: sortDescriptors, limit: limit)
            results = objects
            resultIDs = Set(objects.map(\.id))
            error = nil
        } catch {
            self.error = error
        }
        refreshCount += 1
    }

    private func handle(_ change: ObjectChange<Object.ID>) async {
        if resultIDs.contains(change.id) {
            await refresh()
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
            await refresh()
            return
        }
    }
}

extension ObjectStore {
    /// Returns a ``LiveQuery`` of the objects that match `predicate`, which updates itself as they
    /// change.
    @MainActor
    public func liveQuery(
        matching predicate: Predicate<Object>? = nil,
        sortedBy sortDescriptors: [SortDescriptor<Object>] = [],
        limit: Int? = nil
    ) -> LiveQuery<Object> {
        LiveQuery(store: self, matching: predicate, sortedBy: sortDescriptors, limit: limit)
    }
}
