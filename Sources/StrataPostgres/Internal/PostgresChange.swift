#if Postgres
import Foundation
import Strata

/// A change the table's trigger announces: the message after the sender's name in a
/// notification's payload (see `createTable()`).
enum PostgresChange: Equatable, Sendable {
    /// One key, and what happened to it.
    case key(String, StorageChange<String>.Kind)
    /// Every key: a TRUNCATE (whose keys follow as ``key(_:_:)`` changes of kind `cleared`), or a
    /// key too long to name in a notification.
    case everyKey

    /// Reads `message`; `nil` for one that is no change (a beat, a token).
    init?(_ message: Substring) {
        if message == "*" {
            self = .everyKey
            return
        }
        let kind: StorageChange<String>.Kind
        switch message.first {
        case "s": kind = .set
        case "r": kind = .removed
        case "x": kind = .expired
        case "c": kind = .cleared
        default: return nil
        }
        // PostgreSQL's base64 breaks lines every 76 characters.
        guard let bytes = Data(base64Encoded: String(message.dropFirst()), options: .ignoreUnknownCharacters) else {
            return nil
        }
        self = .key(String(decoding: bytes, as: UTF8.self), kind)
    }

    /// The change a notification's payload ("<sender> <message>") announces, or `nil` for a
    /// SharedCache's own "ready" and "beat" messages and anything else. The sender may hold
    /// spaces; the message never does.
    init?(payload: String) {
        guard let space = payload.lastIndex(of: " ") else { return nil }
        let sender = payload[..<space]
        guard !sender.hasSuffix(" ready"), !sender.hasSuffix(" beat") else { return nil }
        self.init(payload[payload.index(after: space)...])
    }
}
#endif
