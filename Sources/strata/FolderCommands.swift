import ArgumentParser
import Foundation
import Strata

/// Options shared by the commands that work on a disk folder.
struct FolderOptions: ParsableArguments {
    @Option(name: .long, help: "The Strata disk folder to work on.")
    var folder: String

    /// Opens the folder as a store, so opening it never deletes anything, even damaged files.
    func open() throws -> DiskStorage {
        let url = URL(fileURLWithPath: folder)
        return try DiskStorage(url: url, options: DiskStorage.Options(mode: .store))
    }
}

/// Prints to standard error.
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

struct ListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "ls", abstract: "List keys with sizes and ages.")

    @OptionGroup var folder: FolderOptions

    func run() throws {
        let storage = try folder.open()
        let entries = storage.entries().sorted { $0.key < $1.key }
        for entry in entries {
            let age = formatAge(since: entry.lastAccess)
            let expiry = entry.expiry.map { " expires in \(formatAge(since: Date(), now: $0))" } ?? ""
            print(
                "\(formatBytes(entry.size).padding(toLength: 10, withPad: " ", startingAt: 0)) \(age.padding(toLength: 5, withPad: " ", startingAt: 0)) \(entry.key)\(expiry)"
            )
        }
        print("\(entries.count) values, \(formatBytes(storage.totalSize))")
    }
}

struct GetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Write a value to standard output, byte for byte."
    )

    @OptionGroup var folder: FolderOptions
    @Argument(help: "The key.") var key: String

    func run() throws {
        guard let value = try folder.open().value(forKey: key) else {
            printError("no value for key '\(key)'")
            throw ExitCode(1)
        }
        FileHandle.standardOutput.write(value)
    }
}

struct SetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set",
        abstract: "Store standard input (or a file) as a value."
    )

    @OptionGroup var folder: FolderOptions
    @Argument(help: "The key.") var key: String
    @Option(help: "Read the value from this file instead of standard input.") var file: String?
    @Option(help: "Seconds until the value expires.") var timeToLive: Int?

    func run() throws {
        let value: Data
        if let file {
            value = try Data(contentsOf: URL(fileURLWithPath: file))
        } else {
            value = FileHandle.standardInput.readDataToEndOfFile()
        }
        try folder.open().set(value, forKey: key, timeToLive: timeToLive.map { .seconds($0) })
        printError("stored \(formatBytes(value.count)) for '\(key)'")
    }
}

struct RemoveCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "rm", abstract: "Remove values by key.")

    @OptionGroup var folder: FolderOptions
    @Argument(help: "The keys.") var keys: [String]

    func run() throws {
        let storage = try folder.open()
        for key in keys {
            try storage.removeValue(forKey: key)
        }
    }
}

struct StatsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "stats", abstract: "Show totals for a folder.")

    @OptionGroup var folder: FolderOptions

    func run() throws {
        let storage = try folder.open()
        let entries = storage.entries()
        print("folder:        \(storage.url.path)")
        print("values:        \(entries.count)")
        print("size:          \(formatBytes(storage.totalSize)) (\(storage.totalSize) bytes)")
        if let oldest = entries.min(by: { $0.lastAccess < $1.lastAccess }) {
            print("least recent:  \(oldest.key) (\(formatAge(since: oldest.lastAccess)) ago)")
        }
        let expiring = entries.filter { $0.expiry != nil }.count
        print("expiring:      \(expiring)")
        print("damaged files: \(storage.statistics.damagedFiles) (run 'strata verify' for details)")
        print("figures, named as StorageMetrics reports them:")
        for (name, value) in storage.statistics.figures {
            let text = name == "hit_ratio" ? String(format: "%.3f", value) : String(Int64(value))
            print("  \(name.padding(toLength: 26, withPad: " ", startingAt: 0)) \(text)")
        }
    }
}

struct VerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check every value against its checksum; exit 1 and list damaged files if any."
    )

    @OptionGroup var folder: FolderOptions

    func run() throws {
        let report = try folder.open().verify()
        for damaged in report.damagedFiles {
            print("DAMAGED \(damaged.path): \(damaged.reason)")
        }
        print("\(report.checkedFiles) files checked, \(report.damagedFiles.count) damaged")
        if !report.isSound { throw ExitCode(1) }
    }
}

struct TrimCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trim",
        abstract: "Remove least recently used values until the folder fits a byte limit."
    )

    @OptionGroup var folder: FolderOptions
    @Option(help: "The byte limit to trim to.") var bytes: Int

    func validate() throws {
        guard bytes >= 0 else { throw ValidationError("--bytes must not be negative") }
    }

    func run() throws {
        let storage = try folder.open()
        let before = storage.totalSize
        storage.trim(toByteCount: bytes)
        print("trimmed \(formatBytes(before)) to \(formatBytes(storage.totalSize))")
    }
}
