public import Foundation
public import Strata

/// Where an ``ObjectStore`` keeps its encoded objects and their attachments.
///
/// A backend deals in keys (see ``ObjectKeyCoding``) and bytes; the store does the encoding,
/// the queries, the references and the change stream. ``ObjectFolder`` (SHELF's layout of JSON
/// files) is the embedded default; ``StorageObjectBackend`` keeps objects in any Strata storage.
/// A backend must be safe to call from any task; the store serializes writes to one key.
public protocol ObjectStoreBackend: Sendable {
    /// A short name for error messages, such as the folder's path.
    var name: String { get }

    /// Returns the record filed under `key`, or `nil` if there is none.
    func record(forKey key: String) async throws(StorageError) -> Data?

    /// Files `record` under `key`, replacing any earlier one. Returns whether one was replaced.
    @discardableResult
    func setRecord(_ record: Data, forKey key: String) async throws(StorageError) -> Bool

    /// Removes the record under `key` and its attachments. Returns whether a record was removed.
    @discardableResult
    func removeRecord(forKey key: String) async throws(StorageError) -> Bool

    /// The keys of every record, in no particular order.
    func keys() async throws(StorageError) -> [String]

    /// Every record with its key, in no particular order. A record that cannot be read is
    /// returned as a failure naming it, so one damaged record does not hide the others.
    func records() async throws(StorageError) -> [ObjectRecord]

    /// Where the record for `key` lives, for messages (a file path, a table row).
    func location(forKey key: String) -> String

    /// Returns the attachment `name` of the record under `key`, or `nil` if there is none.
    func attachment(named name: String, forKey key: String) async throws(StorageError) -> Data?

    /// Stores `data` as the attachment `name` of the record under `key`.
    func setAttachment(_ data: Data, named name: String, forKey key: String) async throws(StorageError)

    /// Removes the attachment `name` of the record under `key`; a missing one is not an error.
    func removeAttachment(named name: String, forKey key: String) async throws(StorageError)

    /// The names of the attachments of the record under `key`.
    func attachmentNames(forKey key: String) async throws(StorageError) -> [String]
}

/// One record read by ``ObjectStoreBackend/records()``: its key and its bytes, or why they could
/// not be read.
public struct ObjectRecord: Sendable {
    /// The key the record is filed under.
    public var key: String
    /// The record's bytes, or the error reading them gave.
    public var data: Result<Data, StorageError>

    /// Creates a record.
    public init(key: String, data: Result<Data, StorageError>) {
        self.key = key
        self.data = data
    }
}
