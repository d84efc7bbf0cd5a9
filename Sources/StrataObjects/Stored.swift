import Foundation
public import Strata
import _StrataInternals

/// A property that loads its value from a storage by key and saves every assignment back:
/// Vellum's `@Archived`.
///
/// ```swift
/// final class Session {
///     @Stored("current-user", in: disk) var user: User? = nil
/// }
/// session.user = User(name: "Dax")   // written to disk now
/// ```
///
/// The value is read once, when the property is created; when nothing is stored (or what is
/// stored cannot be read) the default stays and ``lastError`` says why. Each assignment is
/// encoded as JSON and written before the setter returns; assigning `nil` to an optional property
/// removes the stored value instead, as Vellum's `@Archived` does, so nothing stored and `nil`
/// are the same thing. A failed write keeps the new value in
/// memory, records the error in ``lastError`` (read it through the projected value:
/// `$user.lastError`) and is retried by ``save()``, so no assignment is silently lost. Any task
/// may use it.
@propertyWrapper
public final class Stored<Value: Codable & Sendable>: Sendable {
    /// The key the value is stored under.
    public let key: String
    private let storage: any SynchronousDataStorage
    private let state: LockedState<(value: Value, lastError: StorageError?)>

    /// Creates a property stored under `key` in `storage`, starting from what is stored there,
    /// or from `defaultValue` when nothing is.
    public init(wrappedValue defaultValue: Value, _ key: String, in storage: some SynchronousDataStorage) {
        self.key = key
        self.storage = storage
        var initial = defaultValue
        var failure: StorageError?
        do throws(StorageError) {
            if let data = try storage.storedData(forKey: key) {
                initial = try Self.decode(data, key: key)
            }
        } catch {
            failure = error
        }
        state = LockedState((initial, failure))
    }

    /// The current value; assigning writes it to the storage.
    public var wrappedValue: Value {
        get { state.withLock { $0.value } }
        set {
            state.withLock { $0.value = newValue }
            do throws(StorageError) {
                try save()
            } catch {
                // Recorded in lastError by save(); the setter cannot throw.
            }
        }
    }

    /// The property wrapper itself, for ``lastError``, ``save()`` and ``reload()``: `$user`.
    public var projectedValue: Stored<Value> { self }

    /// The error of the last load or save, or `nil` when it succeeded.
    public var lastError: StorageError? { state.withLock { $0.lastError } }

    /// Writes the current value to the storage.
    public func save() throws(StorageError) {
        let value = state.withLock { $0.value }
        do throws(StorageError) {
            if let optional = value as? any OptionalValue, optional.isNil {
                try storage.removeData(forKey: key)
                state.withLock { $0.lastError = nil }
                return
            }
            let data: Data
            do {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys]
                data = try encoder.encode(value)
            } catch {
                throw StorageError(
                    .encodingFailed,
                    key: key,
                    storage: "Stored<\(Value.self)>",
                    message: "the value could not be encoded as JSON; it is kept in memory only",
                    underlying: error
                )
            }
            try storage.storeData(data, forKey: key)
            state.withLock { $0.lastError = nil }
        } catch {
            state.withLock { $0.lastError = error }
            throw error
        }
    }

    /// Reads the value from the storage again. When nothing is stored, an optional property
    /// becomes `nil` (another owner of the storage assigned `nil`, or removed the key); any
    /// other keeps its current value.
    public func reload() throws(StorageError) {
        do throws(StorageError) {
            let value: Value
            if let data = try storage.storedData(forKey: key) {
                value = try Self.decode(data, key: key)
            } else if let none = (Value.self as? any OptionalValue.Type)?.nilValue as? Value {
                value = none
            } else {
                return
            }
            state.withLock {
                $0.value = value
                $0.lastError = nil
            }
        } catch {
            state.withLock { $0.lastError = error }
            throw error
        }
    }

    private static func decode(_ data: Data, key: String) throws(StorageError) -> Value {
        do {
            return try JSONDecoder().decode(Value.self, from: data)
        } catch {
            throw StorageError(
                .decodingFailed,
                key: key,
                storage: "Stored<\(Value.self)>",
                message: "the stored value does not decode as \(Value.self); it was left in place",
                underlying: error
            ).carryingUndecodedBytes(of: data)
        }
    }
}

/// An `Optional` of any wrapped type, so that a generic `Stored` can tell `nil` apart.
private protocol OptionalValue {
    var isNil: Bool { get }
    static var nilValue: Self { get }
}

extension Optional: OptionalValue {
    fileprivate var isNil: Bool { self == nil }
    fileprivate static var nilValue: Self { nil }
}
