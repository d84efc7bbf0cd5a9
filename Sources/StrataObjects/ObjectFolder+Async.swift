public import Foundation
public import Strata
import _StrataInternals

/// The async methods, which ``ObjectStoreBackend`` calls: each runs the synchronous method of
/// the same name on Strata's I/O threads, so file I/O never runs on the caller's actor nor holds
/// a cooperative-pool thread in a call that may block. The one exception is a record the kernel
/// can hand over at once (see ``ObjectFolder/Options/readsInPlace``).
extension ObjectFolder {
    /// Reads the record stored for `key`, on Strata's I/O threads; with
    /// ``ObjectFolder/Options/readsInPlace`` (the default), a caller on no actor whose record the
    /// kernel already holds in memory reads it on its own thread, without that hop.
    public func record(forKey key: String) async throws(StorageError) -> Data? {
        // Bound first: `if #isolation == nil` crashes Swift 6.3.1's code generation.
        let isolation = #isolation
        if isolation == nil, let record = recordInPlace(forKey: key) {
            // As `DiskStorage`'s reads in place: a loop of reads that never suspend would hold its
            // cooperative thread, so one on a thread that has gone a millisecond without yielding
            // yields.
            if ReadsInPlaceOnThisThread.isDueToYield() { await Task.yield() }
            return record
        }
        return try await BlockingIOPool.shared.run { () throws(StorageError) in try self.record(forKey: key) }
    }

    /// Writes `record` for `key`, on Strata's I/O threads; `true` when it replaced one.
    @discardableResult
    public func setRecord(_ record: Data, forKey key: String) async throws(StorageError) -> Bool {
        try await BlockingIOPool.shared.run { () throws(StorageError) in try self.setRecord(record, forKey: key) }
    }

    /// Removes the record for `key` and its attachments, on Strata's I/O threads; `true` when
    /// there was one.
    @discardableResult
    public func removeRecord(forKey key: String) async throws(StorageError) -> Bool {
        try await BlockingIOPool.shared.run { () throws(StorageError) in try self.removeRecord(forKey: key) }
    }

    /// Every record's key, listed on Strata's I/O threads.
    public func keys() async throws(StorageError) -> [String] {
        try await BlockingIOPool.shared.run { () throws(StorageError) in try self.keys() }
    }

    /// Every record, read on Strata's I/O threads.
    public func records() async throws(StorageError) -> [ObjectRecord] {
        try await BlockingIOPool.shared.run { () throws(StorageError) in try self.records() }
    }

    /// Reads the attachment `name` of `key`'s object, on Strata's I/O threads.
    public func attachment(named name: String, forKey key: String) async throws(StorageError) -> Data? {
        try await BlockingIOPool.shared.run { () throws(StorageError) in try self.attachment(named: name, forKey: key) }
    }

    /// Writes the attachment `name` of `key`'s object, on Strata's I/O threads.
    public func setAttachment(_ data: Data, named name: String, forKey key: String) async throws(StorageError) {
        try await BlockingIOPool.shared.run { () throws(StorageError) in
            try self.setAttachment(data, named: name, forKey: key)
        }
    }

    /// Removes the attachment `name` of `key`'s object, on Strata's I/O threads.
    public func removeAttachment(named name: String, forKey key: String) async throws(StorageError) {
        try await BlockingIOPool.shared.run { () throws(StorageError) in
            try self.removeAttachment(named: name, forKey: key)
        }
    }

    /// The names of the attachments of `key`'s object, listed on Strata's I/O threads.
    public func attachmentNames(forKey key: String) async throws(StorageError) -> [String] {
        try await BlockingIOPool.shared.run { () throws(StorageError) in try self.attachmentNames(forKey: key) }
    }
}
