#if Postgres
import Foundation
import NIOCore
package import PostgresNIO
package import Strata
import Synchronization
import _StrataInternals

extension PostgresStorage {
    // MARK: Running operations

    /// Runs `operation` on a pooled connection within ``Options/operationTimeout``, turning every
    /// failure into a `StorageError`.
    @discardableResult
    package func perform<Value: Sendable>(
        _ action: String,
        key: String?,
        _ operation: @escaping @Sendable (PostgresConnection) async throws -> Value
    ) async throws(StorageError) -> Value {
        guard begin() else {
            throw StorageError(.closed, key: key, storage: name, message: "the storage was closed")
        }
        defer { end() }
        if let preparation, !preparation.isDone.load(ordering: .acquiring) {
            try await prepare(preparation)
        }
        return try await performPrepared(action, key: key, operation)
    }

    /// Creates or finds the table for a storage over the app's client, once; a failure is
    /// thrown to the operation that waited for it, and the next operation tries again.
    func prepare(_ preparation: Preparation) async throws(StorageError) {
        await preparation.mutex.lock()
        defer { preparation.mutex.unlock() }
        guard !preparation.isDone.load(ordering: .acquiring) else { return }
        try await prepareTable()
        preparation.isDone.store(true, ordering: .releasing)
    }

    /// `perform(_:key:_:)` once the operation is counted in and the table prepared.
    func performPrepared<Value: Sendable>(
        _ action: String,
        key: String?,
        _ operation: @escaping @Sendable (PostgresConnection) async throws -> Value
    ) async throws(StorageError) -> Value {
        let client = client
        let timeout = options.operationTimeout
        let leased = Flag()
        let outcome = await Deadline.race(within: timeout) { () async throws -> Value in
            try await client.withConnection { connection in
                leased.set()
                return try await operation(connection)
            }
        }
        switch outcome {
        case .value(let value):
            return value
        case .failure(let error):
            throw mapError(error, key: key, action)
        case .cancelled:
            throw StorageError(.cancelled, key: key, storage: name, message: "\(action): the task was cancelled")
        case .timedOut where !leased.isSet:
            throw StorageError(
                .io,
                key: key,
                storage: name,
                message: "\(action): no connection to PostgreSQL at \(server) within \(timeout); the server may be down"
            )
        case .timedOut:
            throw StorageError(
                .timedOut,
                key: key,
                storage: name,
                message: "\(action): PostgreSQL at \(server) did not answer within \(timeout)"
            )
        }
    }

    /// Turns a PostgresNIO error into a `StorageError`, keeping the server's message.
    func mapError(_ error: any Error, key: String?, _ action: String) -> StorageError {
        if let error = error as? StorageError { return error }
        if isClosed {
            return StorageError(.closed, key: key, storage: name, message: "the storage was closed", underlying: error)
        }
        if let error = error as? UpdateBodyFailed {
            return StorageError.updateAborted(by: error.error, key: key, storage: name)
        }
        if let error = error as? PostgresTransactionError,
            let cause = error.closureError ?? error.beginError ?? error.commitError ?? error.rollbackError
        {
            return mapError(cause, key: key, action)
        }
        if let error = error as? PSQLError {
            if error.code == .server, let info = error.serverInfo {
                let state = info[.sqlState] ?? "?"
                let message = info[.message] ?? "no message"
                return StorageError(
                    .io,
                    key: key,
                    storage: name,
                    message: "\(action): the server refused (SQLSTATE \(state)): \(message)",
                    underlying: error
                )
            }
            if error.code == .poolClosed {
                return StorageError(.closed, key: key, storage: name, message: "the pool was closed", underlying: error)
            }
            return StorageError(
                .io,
                key: key,
                storage: name,
                message: "\(action): the connection to PostgreSQL at \(server) failed (\(error.code))",
                underlying: error
            )
        }
        return StorageError.wrapping(error, as: .io, key: key, storage: name, message: action)
    }
}
#endif
