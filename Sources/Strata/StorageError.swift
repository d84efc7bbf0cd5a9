public import Foundation

/// The one error every Strata storage throws: a ``code`` to switch on, the key and storage
/// involved, a message a person can act on, and the lower-level error that caused it.
///
/// Absence is not an error: reading a missing key returns `nil`. Any task may use a
/// `StorageError`.
public struct StorageError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, in a form a caller can switch on.
    ///
    /// A struct rather than an enum, so that new codes break no caller's `switch`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's name, as printed in descriptions.
        public let name: String

        /// Creates a code with `name`. Storages outside Strata may define codes of their own.
        public init(_ name: String) {
            self.name = name
        }

        /// The code's name, such as `corrupted`.
        public var description: String { name }

        /// A value that the operation required was absent (for example a non-optional read).
        public static let notFound = Code("notFound")
        /// The key cannot be used by this storage (empty, too long, or otherwise unusable).
        public static let invalidKey = Code("invalidKey")
        /// A value could not be encoded for storing; nothing was written.
        public static let encodingFailed = Code("encodingFailed")
        /// A stored value could not be decoded into the requested type; it was left in place.
        public static let decodingFailed = Code("decodingFailed")
        /// Stored data is damaged: a checksum, header or structure did not match.
        public static let corrupted = Code("corrupted")
        /// The operating system reported an input/output failure.
        public static let io = Code("io")
        /// A limit (size, count or cost) makes the operation impossible.
        public static let capacityExceeded = Code("capacityExceeded")
        /// The operation did not finish within its time limit.
        public static let timedOut = Code("timedOut")
        /// The source behind a storage or provider failed to produce a value.
        public static let sourceFailed = Code("sourceFailed")
        /// The storage was closed and accepts no more operations.
        public static let closed = Code("closed")
        /// The storage does not support this operation (for example writing to a read-only view).
        public static let unsupported = Code("unsupported")
        /// The closure given to `update(forKey:_:)` threw; nothing was written.
        public static let updateAborted = Code("updateAborted")
        /// The storage was configured with values it cannot work with.
        public static let invalidConfiguration = Code("invalidConfiguration")
        /// The task was cancelled before the operation finished.
        public static let cancelled = Code("cancelled")
    }

    /// What went wrong.
    public var code: Code
    /// A description of the key involved, if one was.
    public var key: String?
    /// The name of the storage that threw, such as `"MemoryStorage"` or a name given at creation.
    public var storage: String
    /// What a person needs to know to act on the error.
    public var message: String
    /// The lower-level error that caused this one, such as a `DecodingError` or an `errno` error.
    public var underlying: (any Error)?
    /// For a ``Code/decodingFailed`` or ``Code/corrupted`` error, the bytes that did not decode
    /// (their first 4 KiB and their length), when the value was bytes or text: what a user
    /// debugging a bad payload needs, without reading the store again. Every codec and value
    /// combinator sets it.
    public var undecodedBytes: UndecodedBytes?

    /// Creates an error. `key` is described with `String(describing:)`.
    public init(
        _ code: Code,
        key: (any Sendable)? = nil,
        storage: String,
        message: String,
        underlying: (any Error)? = nil
    ) {
        self.code = code
        self.key = key.map { String(describing: $0) }
        self.storage = storage
        self.message = message
        self.underlying = underlying
    }

    /// One line for a person: the storage, the code, the key if any, the message and the
    /// underlying error.
    public var description: String {
        var text = "\(storage): \(code)"
        if let key {
            text += " for key '\(key)'"
        }
        text += ": \(message)"
        if let underlying {
            text += " (underlying: \(underlying))"
        }
        if let undecodedBytes {
            text += " [\(undecodedBytes)]"
        }
        return text
    }
}

extension StorageError {
    /// The bytes of a value that did not decode: the first ``maximumKeptByteCount`` of them and
    /// how many the value had, as ``StorageError/undecodedBytes`` carries them.
    ///
    /// Any task may use it.
    public struct UndecodedBytes: Sendable, Hashable, CustomStringConvertible {
        /// The most bytes kept of one value: 4 KiB.
        public static let maximumKeptByteCount = 4_096

        /// The value's first bytes, all of them when it has at most ``maximumKeptByteCount``.
        public let prefix: Data
        /// How many bytes the whole value had.
        public let byteCount: Int

        /// Keeps the first ``maximumKeptByteCount`` of `bytes` and counts them all.
        public init(_ bytes: some Collection<UInt8>) {
            byteCount = bytes.count
            prefix = Data(bytes.prefix(Self.maximumKeptByteCount))
        }

        /// Whether ``prefix`` is the whole value.
        public var isComplete: Bool { prefix.count == byteCount }

        /// The length and the first bytes, as text when they are UTF-8, in hexadecimal otherwise:
        /// `12 bytes: "{\"id\": nul"` or `3 bytes: 0xff00ab`.
        public var description: String {
            let shown = prefix.prefix(64)
            let more = byteCount > shown.count ? "…" : ""
            let length = "\(byteCount) byte\(byteCount == 1 ? "" : "s")"
            if let text = String(validating: shown, as: UTF8.self) {
                return "\(length): \(String(reflecting: text))\(more)"
            }
            let hex = shown.prefix(32).map { byte in
                let digits = String(byte, radix: 16)
                return byte < 16 ? "0" + digits : digits
            }
            return "\(length): 0x\(hex.joined())\(byteCount > 32 ? "…" : "")"
        }
    }

    /// This error with ``undecodedBytes`` taken from `value`, when it is a ``Code/decodingFailed``
    /// or ``Code/corrupted`` error that carries none yet and `value` is bytes or text (`Data`, `[UInt8]` or `String`);
    /// otherwise this error unchanged.
    public func carryingUndecodedBytes(of value: Any) -> StorageError {
        guard code == .decodingFailed || code == .corrupted, undecodedBytes == nil else { return self }
        var error = self
        switch value {
        case let data as Data: error.undecodedBytes = UndecodedBytes(data)
        case let bytes as [UInt8]: error.undecodedBytes = UndecodedBytes(bytes)
        case let text as String: error.undecodedBytes = UndecodedBytes(text.utf8)
        default: return self
        }
        return error
    }
}

extension StorageError {
    /// Wraps any error as a `StorageError`: a `StorageError` passes through unchanged, a
    /// `CancellationError` becomes ``Code/cancelled``, and anything else becomes `code` with the
    /// error kept as ``underlying``.
    ///
    /// What a storage of your own calls where a library it uses throws untyped errors:
    ///
    /// ```swift
    /// do {
    ///     return try database.read { try Row.fetchOne($0, key: key) }
    /// } catch {
    ///     throw StorageError.wrapping(error, as: .io, key: key, storage: "MyStorage", message: "cannot read")
    /// }
    /// ```
    public static func wrapping(
        _ error: any Error,
        as code: Code,
        key: (any Sendable)?,
        storage: String,
        message: String
    ) -> StorageError {
        if let error = error as? StorageError {
            return error
        }
        if error is CancellationError {
            return StorageError(.cancelled, key: key, storage: storage, message: "the task was cancelled")
        }
        return StorageError(code, key: key, storage: storage, message: message, underlying: error)
    }

    /// The error of an update whose closure threw: ``Code/updateAborted`` with the closure's
    /// error as ``underlying`` (a `StorageError` or cancellation passes through as
    /// ``wrapping(_:as:key:storage:message:)`` says). Every storage's `update(forKey:_:)` throws
    /// it, having written nothing.
    public static func updateAborted(by error: any Error, key: (any Sendable)?, storage: String) -> StorageError {
        wrapping(
            error,
            as: .updateAborted,
            key: key,
            storage: storage,
            message: "the update closure threw; nothing was written"
        )
    }
}
