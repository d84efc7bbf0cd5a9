#if Postgres
import ArgumentParser
import Foundation
import Strata
import StrataPostgres

/// `strata debug-shared-cache`: a process with a ``SharedCache`` over a PostgreSQL table, driven
/// line by line on standard input, for the tests that measure cross-process invalidation. Hidden
/// from `--help`.
///
/// It prints `ready` once listening. Commands, one a line: `read KEY` reads through the cache and
/// answers `read KEY memory|database|absent`; `set KEY VALUE` writes through it and answers
/// `set KEY`; `quit` ends. Each invalidation prints `dropped KEY NANOSECONDS` (`dropped * …` for
/// every key), the time being the system's monotonic clock, comparable between processes.
struct DebugSharedCacheCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "debug-shared-cache",
        abstract: "Run a shared cache driven from standard input (for Strata's own tests).",
        shouldDisplay: false
    )

    @Option(help: "The PostgreSQL server's URL.") var postgres: String
    @Option(help: "The table to use.") var table = "strata_values"

    func run() async throws {
        let storage = try await PostgresStorage(url: postgres, options: .init(table: table))
        let cache = try await storage.sharedCache(onInvalidation: { invalidation in
            let now = DispatchTime.now().uptimeNanoseconds
            switch invalidation {
            case .key(let key): emit("dropped \(key) \(now)")
            case .all: emit("dropped * \(now)")
            }
        })
        emit("ready")
        while let line = readLine() {
            let fields = line.split(separator: " ", maxSplits: 2).map(String.init)
            switch fields.first {
            case "read" where fields.count == 2:
                let inMemory = cache.memory.value(forKey: fields[1]) != nil
                let value = try await cache.value(forKey: fields[1])
                emit("read \(fields[1]) \(value == nil ? "absent" : inMemory ? "memory" : "database")")
            case "set" where fields.count == 3:
                try await cache.set(Data(fields[2].utf8), forKey: fields[1])
                emit("set \(fields[1])")
            case "quit":
                await cache.close()
                await storage.close()
                return
            default:
                emit("error unknown command: \(line)")
            }
        }
        await cache.close()
        await storage.close()
    }
}

/// Writes one line to standard output at once, so a reading process sees whole lines.
private func emit(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}
#endif
