import ArgumentParser
import Foundation
import Strata
import StrataSQLite

#if Postgres
import StrataPostgres
#endif

/// Options shared by the commands that work on a disk folder.
struct FolderOptions: ParsableArguments {
    @Option(name: .long, help: "The Strata disk folder to work on.")
    var folder: String

    init() {}

    init(folder: String) {
        self.folder = folder
    }

    /// Opens the folder as a store, so opening it never deletes anything, even damaged files.
    ///
    /// Unless `creating`, the folder must already be a Strata disk folder: a command that only
    /// reads never creates one where a mistyped path points.
    func open(creating: Bool = false) throws -> DiskStorage {
        if !creating {
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder), isFolder.boolValue else {
                throw CommandFailure(description: "no folder at \(folder): nothing was read or created")
            }
            guard FileManager.default.fileExists(atPath: folder + "/" + DiskStorage.manifestName) else {
                throw CommandFailure(
                    description: "\(folder) is not a Strata disk folder (it has no \(DiskStorage.manifestName)): "
                        + "nothing was read or created"
                )
            }
        }
        let url = URL(fileURLWithPath: folder)
        return try DiskStorage(url: url, options: DiskStorage.Options(mode: .store))
    }
}

/// Options of the commands that work on any store: a disk folder, a SQLite file or a PostgreSQL
/// table, exactly one of them.
struct StoreOptions: ParsableArguments {
    @Option(name: .long, help: "The Strata disk folder to work on.")
    var folder: String?

    @Option(name: .long, help: "The Strata SQLite database file to work on.")
    var sqlite: String?

    @Option(name: .long, help: "The PostgreSQL server to work on (postgres://user@host:port/database).")
    var postgres: String?

    @Option(name: .long, help: "The PostgreSQL table (with --postgres).")
    var table = "strata_values"

    func validate() throws {
        guard [folder, sqlite, postgres].compactMap({ $0 }).count == 1 else {
            throw ValidationError("give exactly one of --folder, --sqlite and --postgres")
        }
    }

    /// The store the options name, as a person would say it.
    var place: String {
        folder ?? sqlite ?? "table \(table)"
    }

    /// Opens the store the options name; a disk folder opens as a store, so opening it never
    /// deletes anything, even damaged files.
    func open(creating: Bool = false) async throws -> OpenedStore {
        // Opening a folder reads every file's header: seconds for a large one.
        try await Progress.run("opening \(place)") { _ in try await openNow(creating: creating) }
    }

    private func openNow(creating: Bool) async throws -> OpenedStore {
        if let folder {
            return .disk(try FolderOptions(folder: folder).open(creating: creating))
        }
        if let sqlite {
            guard creating || FileManager.default.fileExists(atPath: sqlite) else {
                throw CommandFailure(description: "no SQLite file at \(sqlite)")
            }
            return .sqlite(try SQLiteStorage(path: sqlite))
        }
        #if Postgres
        var options = PostgresStorage.Options(table: table)
        options.createsTable = creating
        return .postgres(try await PostgresStorage(url: postgres ?? "", options: options))
        #else
        throw CommandFailure(
            description: "this strata was built without PostgreSQL: run it with --traits Postgres "
                + "(swift run --traits Postgres strata ...)"
        )
        #endif
    }
}

/// A failure a command reports without its usage text.
struct CommandFailure: Error, CustomStringConvertible {
    var description: String
}

/// A store a command opened.
enum OpenedStore {
    case disk(DiskStorage)
    case sqlite(SQLiteStorage)
    #if Postgres
    case postgres(PostgresStorage)
    #endif

    /// Every key with its value's size, sorted by key.
    func sizes() async throws -> [(key: String, size: Int)] {
        switch self {
        case .disk(let disk):
            return disk.entries().map { ($0.key, $0.size) }.sorted { $0.key < $1.key }
        case .sqlite(let database):
            let keys = try await database.keys()
            let values = try await database.presentValues(forKeys: keys)
            return values.map { ($0.key, $0.value.count) }.sorted { $0.key < $1.key }
        #if Postgres
        case .postgres(let shared):
            let keys = try await shared.keys()
            let values = try await shared.presentValues(forKeys: keys)
            return values.map { ($0.key, $0.value.count) }.sorted { $0.key < $1.key }
        #endif
        }
    }

    /// Where a store is, and its statistics: for a database, its totals (each value counted with
    /// its key) and what this process counted.
    func statistics() async throws -> (place: String, statistics: StorageStatistics) {
        switch self {
        case .disk(let disk):
            return ("folder:        \(disk.url.path)", disk.statistics)
        case .sqlite(let database):
            return ("sqlite file:   \(database.path)", try await database.statistics())
        #if Postgres
        case .postgres(let shared):
            return ("postgres:      table \(shared.options.table)", try await shared.statistics())
        #endif
        }
    }

    func value(forKey key: String) async throws -> Data? {
        switch self {
        case .disk(let disk): try await disk.value(forKey: key)
        case .sqlite(let database): try await database.value(forKey: key)
        #if Postgres
        case .postgres(let shared): try await shared.value(forKey: key)
        #endif
        }
    }

    func set(_ value: Data, forKey key: String, timeToLive: Duration?) async throws {
        switch self {
        case .disk(let disk): try await disk.set(value, forKey: key, timeToLive: timeToLive)
        case .sqlite(let database): try await database.set(value, forKey: key, timeToLive: timeToLive)
        #if Postgres
        case .postgres(let shared): try await shared.set(value, forKey: key, timeToLive: timeToLive)
        #endif
        }
    }

    func removeValue(forKey key: String) async throws {
        switch self {
        case .disk(let disk): try await disk.removeValue(forKey: key)
        case .sqlite(let database): try await database.removeValue(forKey: key)
        #if Postgres
        case .postgres(let shared): try await shared.removeValue(forKey: key)
        #endif
        }
    }

    /// Closes the store's connections.
    func close() async {
        switch self {
        case .disk: break
        case .sqlite(let database): try? database.close()
        #if Postgres
        case .postgres(let shared): await shared.close()
        #endif
        }
    }
}

/// Prints to standard error.
/// Why reading failed, in words a person can act on: the system's reason, not an error domain
/// and code.
func readableReason(_ error: any Error) -> String {
    let error = error as NSError
    if let underlying = error.userInfo[NSUnderlyingErrorKey] as? NSError, underlying.domain == NSPOSIXErrorDomain {
        return String(cString: strerror(Int32(underlying.code)))
    }
    if error.domain == NSPOSIXErrorDomain { return String(cString: strerror(Int32(error.code))) }
    if error.domain == NSCocoaErrorDomain, error.code == NSFileReadNoSuchFileError { return "no such file" }
    return error.localizedDescription
}

func printError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}

func formatBytes(_ count: Int) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"]
    var value = Double(count)
    var unit = 0
    while value >= 1024, unit < units.count - 1 {
        value /= 1024
        unit += 1
    }
    return unit == 0 ? "\(count) B" : String(format: "%.1f %@", value, units[unit])
}

func formatAge(since date: Date, now: Date = Date()) -> String {
    let seconds = max(0, Int(now.timeIntervalSince(date)))
    switch seconds {
    case ..<60: return "\(seconds)s"
    case ..<3600: return "\(seconds / 60)m"
    case ..<86400: return "\(seconds / 3600)h"
    default: return "\(seconds / 86400)d"
    }
}

struct ListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "ls", abstract: "List keys with sizes and ages.")

    @OptionGroup var store: StoreOptions

    func run() async throws {
        let opened = try await store.open()
        guard case .disk(let storage) = opened else {
            let sizes = try await Progress.run("reading \(store.place)") { _ in try await opened.sizes() }
            for entry in sizes {
                print("\(formatBytes(entry.size).padding(toLength: 10, withPad: " ", startingAt: 0)) \(entry.key)")
            }
            // The database's totals (what `stats` shows) count each key's bytes with its value's.
            let values = sizes.reduce(0) { $0 + $1.size }
            let keys = sizes.reduce(0) { $0 + $1.key.utf8.count }
            print(
                "\(sizes.count) values, \(formatBytes(values)) of values, \(formatBytes(values + keys)) with their keys"
            )
            await opened.close()
            return
        }
        let entries = storage.entries().sorted { $0.key < $1.key }
        for entry in entries {
            let age = formatAge(since: entry.lastAccess)
            let expiry = entry.expiry.map { " expires in \(formatAge(since: Date(), now: $0))" } ?? ""
            print(
                "\(formatBytes(entry.valueSize).padding(toLength: 10, withPad: " ", startingAt: 0)) \(age.padding(toLength: 5, withPad: " ", startingAt: 0)) \(entry.key)\(expiry)"
            )
        }
        // Sizes are the values'; the files add a header each (56 bytes and the key).
        let values = entries.reduce(0) { $0 + $1.valueSize }
        print(
            "\(entries.count) values, \(formatBytes(values)) of values, "
                + "\(formatBytes(storage.totalSize)) on disk with headers"
        )
    }
}

struct GetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Write a value to standard output, byte for byte."
    )

    @OptionGroup var store: StoreOptions
    @Argument(help: "The key.") var key: String

    func run() async throws {
        let opened = try await store.open()
        let value = try await opened.value(forKey: key)
        await opened.close()
        guard let value else {
            printError("no value for key '\(key)'")
            throw ExitCode(1)
        }
        FileHandle.standardOutput.write(value)
    }
}

struct SetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set",
        abstract: "Store standard input (or a file) as a value."
    )

    @OptionGroup var store: StoreOptions
    @Argument(help: "The key.") var key: String
    @Option(help: "Read the value from this file instead of standard input.") var file: String?
    // Unconditional, so that `--time-to-live -5` is read as a value and refused as one, rather
    // than reported as a missing value.
    @Option(parsing: .unconditional, help: "Seconds until the value expires.") var timeToLive: Int?

    func validate() throws {
        if let timeToLive, timeToLive <= 0 {
            throw ValidationError("--time-to-live takes a positive number of seconds, not \(timeToLive)")
        }
    }

    func run() async throws {
        let value: Data
        do {
            if let file {
                value = try Data(contentsOf: URL(fileURLWithPath: file))
            } else {
                value = try FileHandle.standardInput.readToEnd() ?? Data()
            }
        } catch {
            printError(
                "cannot read \(file.map { "'\($0)'" } ?? "standard input"): \(readableReason(error)); nothing was stored"
            )
            throw ExitCode(1)
        }
        let opened = try await store.open(creating: true)
        try await opened.set(value, forKey: key, timeToLive: timeToLive.map { .seconds($0) })
        await opened.close()
        printError("stored \(formatBytes(value.count)) for '\(key)'")
    }
}

struct RemoveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "rm", abstract: "Remove values by key.")

    @OptionGroup var store: StoreOptions
    @Argument(help: "The keys.") var keys: [String]

    func run() async throws {
        let opened = try await store.open()
        var missing = 0
        for key in keys {
            // Asked first, so that a key that was not there is said, as `rm` says of a file.
            if try await opened.value(forKey: key) == nil {
                printError("no value for '\(key)'")
                missing += 1
            }
            try await opened.removeValue(forKey: key)
        }
        await opened.close()
        if missing > 0 { throw ExitCode(1) }
    }
}

struct StatsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "stats", abstract: "Show totals for a store.")

    @OptionGroup var store: StoreOptions

    func run() async throws {
        let opened = try await store.open()
        switch opened {
        case .disk(let storage):
            let entries = storage.entries()
            print("folder:        \(storage.url.path)")
            print("values:        \(entries.count)")
            let values = storage.entries().reduce(0) { $0 + $1.valueSize }
            print(
                "size:          \(formatBytes(storage.totalSize)) on disk, headers included "
                    + "(\(storage.totalSize) bytes; \(formatBytes(values)) of values)"
            )
            if let oldest = entries.min(by: { $0.lastAccess < $1.lastAccess }) {
                print("least recent:  \(oldest.key) (\(formatAge(since: oldest.lastAccess)) ago)")
            }
            let expiring = entries.filter { $0.expiry != nil }.count
            print("expiring:      \(expiring)")
            print("damaged files: \(storage.statistics.damagedFiles) (run 'strata verify' for details)")
            printFigures(storage.statistics)
        default:  // a database: SQLite, or PostgreSQL with its trait
            let (place, statistics) = try await opened.statistics()
            print(place)
            print("values:        \(statistics.count)")
            print(
                "size:          \(formatBytes(statistics.totalCost)) of keys and values (\(statistics.totalCost) bytes)"
            )
            printFigures(statistics)
        }
        await opened.close()
    }

    /// The figures every storage keeps, printed the same way for every backend.
    private func printFigures(_ statistics: StorageStatistics) {
        print("figures, named as StorageMetrics reports them; hits, misses, writes, evictions and")
        print("rejections count what this command did, as each process counts its own:")
        let figures = statistics.figures
        let width = figures.map(\.name.count).max() ?? 0
        for (name, value) in figures {
            let text = name == "hit_ratio" ? String(format: "%.3f", value) : String(Int64(value))
            print("  \(name.padding(toLength: width, withPad: " ", startingAt: 0)) \(text)")
        }
    }
}

struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check every value against its checksum; exit 1 and list damaged files if any."
    )

    @OptionGroup var folder: FolderOptions

    func run() async throws {
        let storage = try await Progress.run("opening \(folder.folder)") { _ in try folder.open() }
        let report = try await Progress.run("verifying \(folder.folder)") { progress in
            try storage.verify { progress.report($0) }
        }
        for damaged in report.damagedFiles {
            print("DAMAGED \(damaged.path): \(damaged.reason)")
        }
        print("\(report.checkedFiles) files checked, \(report.damagedFiles.count) damaged")
        if !report.isSound { throw ExitCode(1) }
    }
}

struct TrimCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trim",
        abstract: "Remove least recently used values until the folder fits a byte limit."
    )

    @OptionGroup var folder: FolderOptions
    @Option(help: "The byte limit to trim to.") var bytes: Int

    func validate() throws {
        guard bytes >= 0 else { throw ValidationError("--bytes must not be negative") }
    }

    func run() async throws {
        let storage = try await Progress.run("opening \(folder.folder)") { _ in try folder.open() }
        let before = storage.totalSize
        let removed = try await Progress.run("trimming \(folder.folder)") { _ in try storage.trim(toByteCount: bytes) }
        print("removed \(removed) values: \(formatBytes(before)) trimmed to \(formatBytes(storage.totalSize))")
    }
}
