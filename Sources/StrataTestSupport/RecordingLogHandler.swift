package import Logging
import Strata
package import _StrataInternals

/// A log handler that keeps every message it is given, for tests of what a storage logs. Copies
/// share one record, so a test keeps the handler and reads what the logger wrote. Any task may use
/// it.
package struct RecordingLogHandler: LogHandler {
    /// One message as logged.
    package struct Entry: Sendable {
        package var level: Logger.Level
        package var message: String
        package var metadata: [String: String]
    }

    package final class Record: Sendable {
        package let entries = LockedState([Entry]())
    }

    package let record = Record()
    package var metadata: Logger.Metadata = [:]
    package var logLevel: Logger.Level

    /// A logger that lets `level` and above through, and the handler that records it.
    package static func logger(level: Logger.Level) -> (Logger, RecordingLogHandler) {
        let handler = RecordingLogHandler(logLevel: level)
        return (Logger(label: "strata.test") { _ in handler }, handler)
    }

    package init(logLevel: Logger.Level) {
        self.logLevel = logLevel
    }

    package var entries: [Entry] {
        record.entries.withLock { $0 }
    }

    package func log(event: LogEvent) {
        var flattened: [String: String] = [:]
        for (key, value) in metadata.merging(event.metadata ?? [:], uniquingKeysWith: { $1 }) {
            flattened[key] = "\(value)"
        }
        let entry = Entry(level: event.level, message: "\(event.message)", metadata: flattened)
        record.entries.withLock { $0.append(entry) }
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
}

extension RecordingLogHandler.Entry {
    /// The message and every metadata value, for checking that something never appears.
    package var fullText: String {
        ([message] + metadata.map { "\($0.key)=\($0.value)" }).joined(separator: " ")
    }
}
