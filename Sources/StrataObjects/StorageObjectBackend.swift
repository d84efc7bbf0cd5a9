public import Foundation
public import Strata

/// An ``ObjectStoreBackend`` over any Strata storage of `Data` by `String` that can list its
/// keys: a `MemoryStorage` for tests, a `DiskStorage`, or a database storage.
///
/// Records are kept under `o/<key>` and attachments under `a/<length of key>:<key><name>`, so no
/// record key can be mistaken for an attachment. Removing a record lists the storage's keys to
/// find its attachments. Any task may use it.
public struct StorageObjectBackend<Base: Storage<String, Data> & EnumerableStorage>: ObjectStoreBackend {
    /// The storage that holds the records.
    public let base: Base
    /// A short name for error messages.
    public let name: String

    /// Creates a backend over `base`.
    public init(_ base: Base, name: String? = nil) {
        self.base = base
        self.name = name ?? "\(Base.self)"
    }

    private static func recordKey(_ key: String) -> String { "o/" + key }

    private static func attachmentPrefix(_ key: String) -> String { "a/\(key.utf8.count):\(key)" }

    public func record(forKey key: String) async throws(StorageError) -> Data? {
        try await base.value(forKey: Self.recordKey(key))
    }

    @discardableResult
    public func setRecord(_ record: Data, forKey key: String) async throws(StorageError) -> Bool {
        let existed = try await base.value(forKey: Self.recordKey(key)) != nil
        try await base.set(record, forKey: Self.recordKey(key))
        return existed
    }

    @discardableResult
    public func removeRecord(forKey key: String) async throws(StorageError) -> Bool {
        let existed = try await base.value(forKey: Self.recordKey(key)) != nil
        try await base.removeValue(forKey: Self.recordKey(key))
        for name in try await attachmentNames(forKey: key) {
            try await removeAttachment(named: name, forKey: key)
        }
        return existed
    }

    public func keys() async throws(StorageError) -> [String] {
        try await base.keys().compactMap {
            $0.utf8.starts(with: "o/".utf8) ? String(decoding: $0.utf8.dropFirst(2), as: UTF8.self) : nil
        }
    }

    public func records() async throws(StorageError) -> [ObjectRecord] {
        var records: [ObjectRecord] = []
        for key in try await keys() {
            do throws(StorageError) {
                if let data = try await record(forKey: key) {
                    records.append(ObjectRecord(key: key, data: .success(data)))
                }
            } catch {
                records.append(ObjectRecord(key: key, data: .failure(error)))
            }
        }
        return records
    }

    public func location(forKey key: String) -> String {
        "\(name)[\(Self.recordKey(key))]"
    }

    public func attachment(named name: String, forKey key: String) async throws(StorageError) -> Data? {
        try await base.value(forKey: Self.attachmentPrefix(key) + name)
    }

    public func setAttachment(_ data: Data, named name: String, forKey key: String) async throws(StorageError) {
        guard !name.isEmpty else {
            throw StorageError(.invalidKey, key: key, storage: self.name, message: "an attachment needs a name")
        }
        try await base.set(data, forKey: Self.attachmentPrefix(key) + name)
    }

    public func removeAttachment(named name: String, forKey key: String) async throws(StorageError) {
        try await base.removeValue(forKey: Self.attachmentPrefix(key) + name)
    }

    public func attachmentNames(forKey key: String) async throws(StorageError) -> [String] {
        let prefix = Self.attachmentPrefix(key)
        return try await base.keys().compactMap {
            $0.utf8.starts(with: prefix.utf8)
                ? String(decoding: $0.utf8.dropFirst(prefix.utf8.count), as: UTF8.self) : nil
        }
    }
}
