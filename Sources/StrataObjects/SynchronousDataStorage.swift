public import Foundation
public import Strata

/// A storage of bytes by string key that answers without suspending, so a property can read and
/// write it: `DiskStorage` and `MemoryStorage<String, Data>`.
public protocol SynchronousDataStorage: Sendable {
    /// Returns the bytes stored for `key`, or `nil`.
    func storedData(forKey key: String) throws(StorageError) -> Data?
    /// Stores `data` for `key`.
    func storeData(_ data: Data, forKey key: String) throws(StorageError)
    /// Removes whatever is stored for `key`; nothing stored is not an error.
    func removeData(forKey key: String) throws(StorageError)
}

/// A disk storage can back a ``Stored`` property.
extension DiskStorage: SynchronousDataStorage {
    /// Returns the bytes stored for `key`, or `nil`.
    public func storedData(forKey key: String) throws(StorageError) -> Data? {
        try value(forKey: key)
    }

    /// Stores `data` for `key`.
    public func storeData(_ data: Data, forKey key: String) throws(StorageError) {
        try set(data, forKey: key)
    }

    /// Removes whatever is stored for `key`.
    public func removeData(forKey key: String) throws(StorageError) {
        try removeValue(forKey: key)
    }
}

/// A memory storage of bytes can back a ``Stored`` property.
extension MemoryStorage: SynchronousDataStorage where Key == String, Value == Data {
    /// Returns the bytes stored for `key`, or `nil`.
    public func storedData(forKey key: String) -> Data? {
        value(forKey: key)
    }

    /// Stores `data` for `key`.
    public func storeData(_ data: Data, forKey key: String) {
        set(data, forKey: key)
    }

    /// Removes whatever is stored for `key`.
    public func removeData(forKey key: String) {
        removeValue(forKey: key)
    }
}
