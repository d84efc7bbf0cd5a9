import GRDB
package import Strata

/// How the SQLite storages turn GRDB's errors into `StorageError`s, shared by ``SQLiteStorage`` and
/// `SQLiteObjectBackend` so both report a damaged file, a lock and a closed handle alike.
package enum SQLiteErrors {
    /// The error of opening the file at `path`.
    package static func opening(_ error: any Error, path: String, storage: String) -> StorageError {
        if let error = error as? StorageError { return error }
        if let error = error as? DatabaseError,
            [.SQLITE_NOTADB, .SQLITE_CORRUPT].contains(error.resultCode)
        {
            return StorageError(
                .corrupted,
                storage: storage,
                message: "\(path) is not a SQLite database or is damaged; move it aside or delete it",
                underlying: error
            )
        }
        return StorageError(.io, storage: storage, message: "cannot open \(path)", underlying: error)
    }

    /// The error of an operation on an open file: `closed` after `close()`, `corrupted` for a
    /// damaged file, `timedOut` for a lock held too long, else `io`.
    package static func operation(
        _ error: any Error,
        key: String?,
        message: String,
        path: String,
        storage: String,
        isClosed: Bool,
        closedMessage: String
    ) -> StorageError {
        if let error = error as? StorageError { return error }
        if isClosed {
            return StorageError(.closed, key: key, storage: storage, message: closedMessage, underlying: error)
        }
        if let error = error as? DatabaseError {
            switch error.resultCode {
            case .SQLITE_NOTADB, .SQLITE_CORRUPT:
                return StorageError(
                    .corrupted,
                    key: key,
                    storage: storage,
                    message: "\(message): \(path) is damaged",
                    underlying: error
                )
            case .SQLITE_ABORT where error.message == "Database is suspended":
                return StorageError(
                    .io,
                    key: key,
                    storage: storage,
                    message: "\(message): the database is suspended until SQLiteStorage.resumeAll()",
                    underlying: error
                )
            case .SQLITE_BUSY, .SQLITE_LOCKED:
                return StorageError(
                    .timedOut,
                    key: key,
                    storage: storage,
                    message: "\(message): another connection held the database locked for too long",
                    underlying: error
                )
            default:
                break
            }
        }
        return StorageError.wrapping(error, as: .io, key: key, storage: storage, message: message)
    }
}
