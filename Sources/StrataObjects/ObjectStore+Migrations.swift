public import Strata
import _StrataInternals

extension ObjectStore {
    /// Rewrites every object stored at an older schema version at the current one, and returns
    /// how many it rewrote. Only for a ``VersionedObject``; for other types it changes nothing.
    ///
    /// ```swift
    /// let report = try await notes.migrate { progress in
    ///     print("\(progress.completed) of \(progress.total)")
    /// }
    /// ```
    ///
    /// Reads migrate older objects without this (lazily, in memory, each time); `migrate()` makes
    /// it permanent, so later reads decode the current type directly and the database backends'
    /// indexes hold the new shape's values. Each object is read, migrated and written back on
    /// its own, under the same per-ID write lock as ``update(withID:_:)``, so concurrent readers
    /// and writers see either the old or the new version of an object and never lose a write.
    /// Every backend replaces a record atomically (a rename for the folder, a transaction for
    /// the databases), so a process killed at any moment leaves each object at its old version or
    /// its new one, both readable; calling `migrate()` again finishes the job.
    ///
    /// - Parameter progress: Called after each object, on the calling task.
    /// - Throws: `StorageError.Code.migrationFailed` after every other object was migrated, when
    ///   some could not be (a step threw, or an object was written by a newer version): the
    ///   message counts them and names the first, whose error is the underlying one; those
    ///   objects are left as they were. The backend's errors.
    @discardableResult
    public func migrate(
        progress: (@Sendable (MigrationProgress) -> Void)? = nil
    ) async throws(StorageError) -> MigrationReport {
        let keys = try await backend.keys().sorted()
        var report = MigrationReport(migrated: 0, alreadyCurrent: 0)
        guard let current = coding.currentVersion else {
            report.alreadyCurrent = keys.count
            return report
        }
        var failures: [StorageError] = []
        for (index, key) in keys.enumerated() {
            do throws(StorageError) {
                switch try await migrateObject(forKey: key, to: current) {
                case true?: report.migrated += 1
                case false?: report.alreadyCurrent += 1
                case nil: break  // deleted meanwhile
                }
            } catch {
                failures.append(error)
            }
            progress?(MigrationProgress(completed: index + 1, total: keys.count, migrated: report.migrated))
        }
        if let first = failures.first {
            throw StorageError(
                .migrationFailed,
                key: first.key,
                storage: name,
                message:
                    "\(failures.count) of \(keys.count) objects could not be migrated and were left as they were (\(report.migrated) were migrated); the first: \(first.message)",
                underlying: first
            )
        }
        return report
    }

    /// Migrates the object under `key` in place: `true` when it was rewritten, `false` when it was
    /// already at `current`, `nil` when it is gone.
    private func migrateObject(forKey key: String, to current: Int) async throws(StorageError) -> Bool? {
        try await withStripe(for: key) { () async throws(StorageError) -> Bool? in
            guard let data = try await backend.record(forKey: key) else { return nil }
            let (object, storedVersion) = try decodeWithVersion(data, key: key)
            guard storedVersion != current else { return false }
            let updated = try encode(object, key: key)
            try await backend.setRecord(updated, forKey: key)
            apply(Entry(object: object, fingerprint: XXHash64.hash(updated)), forKey: key)
            publish(.updated(object.id))
            return true
        }
    }
}
