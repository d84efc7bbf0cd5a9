public import Foundation
public import Strata

/// Attachments: bytes kept beside an object, under names of their own, and deleted with it.
extension ObjectStore {
    /// Returns the attachment `name` of the object with `id`, or `nil` if there is none.
    public func attachment(named name: String, forObjectWithID id: Object.ID) async throws(StorageError) -> Data? {
        try await backend.attachment(named: name, forKey: keyCoding.key(for: id))
    }

    /// Stores `data` as the attachment `name` of the object with `id`: arbitrary bytes kept
    /// beside the object and deleted with it.
    ///
    /// - Throws: `StorageError.Code.notFound` when there is no such object,
    ///   `StorageError.Code.invalidKey` for an empty or too long name.
    public func setAttachment(
        _ data: Data,
        named name: String,
        forObjectWithID id: Object.ID
    ) async throws(StorageError) {
        let key = try keyCoding.key(for: id)
        try await withStripe(for: key) { () async throws(StorageError) in
            guard try await backend.record(forKey: key) != nil else {
                throw StorageError(
                    .notFound,
                    key: key,
                    storage: self.name,
                    message: "there is no object to attach '\(name)' to"
                )
            }
            try await backend.setAttachment(data, named: name, forKey: key)
        }
    }

    /// Removes the attachment `name` of the object with `id`; a missing one is not an error.
    public func removeAttachment(named name: String, forObjectWithID id: Object.ID) async throws(StorageError) {
        let key = try keyCoding.key(for: id)
        try await withStripe(for: key) { () async throws(StorageError) in
            try await backend.removeAttachment(named: name, forKey: key)
        }
    }

    /// The names of the attachments of the object with `id`, sorted.
    public func attachmentNames(forObjectWithID id: Object.ID) async throws(StorageError) -> [String] {
        try await backend.attachmentNames(forKey: keyCoding.key(for: id)).sorted()
    }
}
