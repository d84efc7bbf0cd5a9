import Logging
import Strata

/// A log handler that keeps every message it is given, for tests of what a storage logs. Copies
/// share one record, so a test keeps the handler and reads what the logger wrote. Any task may use
/// it.
struct RecordingLogHandler: LogHandler {
    /// One message as logged.
    struct Entry: Sendable {
        var level: Logger.Level
        var message: String
        var metadata: [String: String]
    }

    final class Record: Sendable {
        let entries = LockedState([Entry]())
    }

    let record = Record()
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level

    /// A logger that lets `level` and above through, and the handler that records it.
    static func logger(level: Logger.Level) -> (Logger, RecordingLogHandler) {
        let handler = RecordingLogHandler(logLevel: level)
        return (Logger(label: "strata.test") { _ in handler }, handler)
    }

    init(logLevel: Logger.Level) {
        self.logLevel = logLevel
    }

    var entries: [Entry] {
        record.entries.withLock { $0 }
    }

    func log(event: LogEvent) {
        var flattened: [String: String] = [:]
        for (key, value) in metadata.merging(event.metadata ?? [:], uniquingKeysWith: { $1 }) {
            flattened[key] = "\(value)"
        }
        let entry = Entry(level: event.level, message: "\(event.message)", metadata: flattened)
        record.entries.withLock { $0.append(entry) }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
}

extension RecordingLogHandler.Entry {
    /// The message and every metadata value, for checking that something never appears.
    var fullText: String {
        ([message] + metadata.map { "\($0.key)=\($0.value)" }).joined(separator: " ")
    }
}
