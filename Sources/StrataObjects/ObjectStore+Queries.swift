public import Foundation
public import Strata
import _StrataInternals

extension ObjectStore {
    /// Returns the objects that match `predicate`, sorted by `sortDescriptors`, at most `limit` of
    /// them.
    ///
    /// ```swift
    /// let premium = try await users.objects(
    ///     matching: #Predicate { $0.userName.contains("premium") && $0.fullName != nil },
    ///     sortedBy: [SortDescriptor(\.age), SortDescriptor(\.userName, order: .reverse)],
    ///     limit: 10
    /// )
    /// ```
    ///
    /// Objects that compare equal under every descriptor are ordered by their keys, so a query's
    /// result is the same every time; without descriptors the order is unspecified. The query runs
    /// over the objects the store keeps in memory (see ``Options/keepsObjectsInMemory``), loading
    /// them on first use.
    ///
    /// - Throws: `StorageError.Code.queryFailed` when the predicate throws on an object, or the
    ///   error of an object that cannot be read (unless ``Options/skipsUnreadableObjects``).
    public func objects(
        matching predicate: Predicate<Object>? = nil,
        sortedBy sortDescriptors: [SortDescriptor<Object>] = [],
        limit: Int? = nil
    ) async throws(StorageError) -> [Object] {
        try await matches(predicate, sortedBy: sortDescriptors, limit: limit).map(\.object)
    }

    /// Returns the objects for which `isIncluded` returns `true`, sorted by `sortDescriptors`, at
    /// most `limit` of them.
    ///
    /// The same query as ``objects(matching:sortedBy:limit:)`` with a closure instead of a
    /// `#Predicate`: a closure is compiled, where Foundation interprets a predicate, so on Linux a
    /// query over 100,000 objects took 0.3 µs per object with a closure against 1.1 µs with the
    /// same condition as a predicate. A predicate can be stored and printed; a closure cannot.
    public func objects(
        where isIncluded: (Object) throws -> Bool,
        sortedBy sortDescriptors: [SortDescriptor<Object>] = [],
        limit: Int? = nil
    ) async throws(StorageError) -> [Object] {
        try await matches(sortedBy: sortDescriptors, limit: limit) { object throws(StorageError) in
            do {
                return try isIncluded(object)
            } catch {
                throw queryError(on: object, underlying: error, what: "filter")
            }
        }.map(\.object)
    }

    /// Returns the first object that matches `predicate` under `sortDescriptors`, or `nil`.
    public func first(
        matching predicate: Predicate<Object>? = nil,
        sortedBy sortDescriptors: [SortDescriptor<Object>] = []
    ) async throws(StorageError) -> Object? {
        try await matches(predicate, sortedBy: sortDescriptors, limit: 1).first?.object
    }

    /// The number of objects that match `predicate`.
    public func count(matching predicate: Predicate<Object>? = nil) async throws(StorageError) -> Int {
        let objects = try await loadedObjects()
        guard let predicate else { return objects.count }
        var count = 0
        for entry in objects.values where try evaluate(predicate, on: entry.object) { count += 1 }
        return count
    }

    /// The objects matching `predicate` with their keys, sorted and limited.
    func matches(
        _ predicate: Predicate<Object>?,
        sortedBy sortDescriptors: [SortDescriptor<Object>],
        limit: Int?
    ) async throws(StorageError) -> [(key: String, object: Object)] {
        if let limit, limit <= 0 { return [] }
        let objects = try await loadedObjects()
        // A predicate and descriptors are values: the query runs on Strata's I/O threads, off the
        // caller's actor, however many objects it reads.
        let matches = try await BlockingIOPool.shared.run { () throws(StorageError) in
            try self.matches(in: objects, sortedBy: sortDescriptors, limit: limit) { object throws(StorageError) in
                guard let predicate else { return true }
                return try self.evaluate(predicate, on: object)
            }.map { MatchedObject(key: $0.key, object: $0.object) }
        }
        return matches.map { ($0.key, $0.object) }
    }

    /// The objects `isIncluded` keeps, with their keys, sorted and limited.
    ///
    /// `isIncluded` is the caller's closure, so the filter runs where the caller is; the objects
    /// are read and decoded on Strata's I/O threads first.
    func matches(
        sortedBy sortDescriptors: [SortDescriptor<Object>],
        limit: Int?,
        _ isIncluded: (Object) throws(StorageError) -> Bool
    ) async throws(StorageError) -> [(key: String, object: Object)] {
        if let limit, limit <= 0 { return [] }
        let objects = try await loadedObjects()
        return try matches(in: objects, sortedBy: sortDescriptors, limit: limit, isIncluded)
    }

    private func matches(
        in objects: [String: Entry],
        sortedBy sortDescriptors: [SortDescriptor<Object>],
        limit: Int?,
        _ isIncluded: (Object) throws(StorageError) -> Bool
    ) throws(StorageError) -> [(key: String, object: Object)] {
        var results: [(key: String, object: Object)] = []
        guard !sortDescriptors.isEmpty else {
            for (key, entry) in objects {
                if try !isIncluded(entry.object) { continue }
                results.append((key, entry.object))
                if let limit, results.count >= limit { break }
            }
            return results
        }
        func precedes(_ left: (key: String, object: Object), _ right: (key: String, object: Object)) -> Bool {
            for descriptor in sortDescriptors {
                switch descriptor.compare(left.object, right.object) {
                case .orderedAscending: return true
                case .orderedDescending: return false
                case .orderedSame: continue
                }
            }
            return left.key < right.key
        }
        // A small limit keeps only the best `limit` matches, in order, as they are found: most
        // matches lose to the current last with one comparison, and nothing is sorted whole.
        if let limit, limit <= Self.topMatchesLimit {
            for (key, entry) in objects {
                if try !isIncluded(entry.object) { continue }
                let candidate = (key: key, object: entry.object)
                if results.count == limit, let last = results.last, !precedes(candidate, last) { continue }
                var low = 0
                var high = results.count
                while low < high {
                    let middle = (low + high) / 2
                    if precedes(results[middle], candidate) { low = middle + 1 } else { high = middle }
                }
                results.insert(candidate, at: low)
                if results.count > limit { results.removeLast() }
            }
            return results
        }
        for (key, entry) in objects where try isIncluded(entry.object) {
            results.append((key, entry.object))
        }
        results.sort(by: precedes)
        if let limit, results.count > limit { results.removeSubrange(limit...) }
        return results
    }

    /// The largest limit kept by insertion into the best matches so far; a larger one sorts every
    /// match and cuts.
    private static var topMatchesLimit: Int { 256 }

    /// A match as it crosses from the I/O threads back to the caller.
    private struct MatchedObject: Sendable {
        var key: String
        var object: Object
    }

    private func evaluate(_ predicate: Predicate<Object>, on object: Object) throws(StorageError) -> Bool {
        do {
            return try predicate.evaluate(object)
        } catch {
            throw queryError(on: object, underlying: error, what: "predicate")
        }
    }

    private func queryError(on object: Object, underlying: any Error, what: String) -> StorageError {
        StorageError(
            .queryFailed,
            key: (try? keyCoding.key(for: object.id)) ?? "\(object.id)",
            storage: name,
            message: "the \(what) threw on this object",
            underlying: underlying
        )
    }
}
