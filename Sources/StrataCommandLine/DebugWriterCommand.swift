import ArgumentParser
import Foundation
import Strata
import StrataSQLite
import _StrataInternals

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// `strata debug-writer`: writes values to a disk folder in a loop, for the tests that run several
/// processes on one folder and kill a writer mid-write. Hidden from `--help`.
///
/// Set number `n` (counting from `--first-counter`) writes key `key-<n mod keys>` with
/// ``DebugValue/make(key:counter:)``, whose content a reader can check byte for byte. It prints
/// `ready` once the folder is open, and with `--start-file` waits for that file to exist before
/// its first write, so that several writers start together. With `--create`, each write stores
/// its value only if the key has none, in one update, as a framework's `create` does. With
/// `--ack-file`, each set that returned (each create that stored) is then recorded by appending
/// `key counter` and a newline to that file in one `write`. The writer exits as soon as
/// the process that started it is gone, so a test run that dies never leaves writers behind (they
/// would hold the run's output open and keep it from ending).
struct DebugWriterCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "debug-writer",
        abstract: "Write checkable values in a loop (for Strata's own tests).",
        shouldDisplay: false
    )

    @Option(help: "The disk folder to write to.") var folder: String
    @Option(help: "How many distinct keys to cycle through.") var keys = 16
    @Option(help: "How many values to write; 0 writes until killed.") var iterations = 1000
    @Option(help: "The counter of the first value.") var firstCounter = 1
    @Flag(help: "Sync every write and its folder before acknowledging it.") var durable = false
    @Option(help: "Append 'key counter' to this file after each acknowledged set.") var ackFile: String?
    @Flag(help: "Store each value only if its key has none.") var create = false
    @Option(help: "Wait for this file to exist before the first write.") var startFile: String?
    @Flag(help: "Write to the SQLite database values.sqlite in the folder instead of the folder.") var sqlite = false

    func validate() throws {
        guard keys > 0 else { throw ValidationError("--keys must be positive") }
        guard iterations >= 0 else { throw ValidationError("--iterations must not be negative") }
    }

    func run() throws {
        let parent = getppid()
        let writer = try Writer(folder: folder, sqlite: sqlite, durable: durable)
        var acknowledgements: Int32 = -1
        if let ackFile {
            acknowledgements = open(ackFile, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
            guard acknowledgements >= 0 else {
                throw ValidationError("cannot open \(ackFile): \(String(cString: strerror(errno)))")
            }
        }
        defer { if acknowledgements >= 0 { close(acknowledgements) } }
        FileHandle.standardOutput.write(Data("ready\n".utf8))
        if let startFile {
            while access(startFile, F_OK) != 0 {
                if getppid() != parent { return }
                usleep(200)
            }
        }
        var counter = firstCounter
        while iterations == 0 || counter < firstCounter + iterations {
            // Orphaned: whoever started the writer died without stopping it.
            if getppid() != parent { return }
            let key = "key-\(counter % keys)"
            let value = DebugValue.make(key: key, counter: counter)
            var stored = true
            if create {
                stored = try writer.create(value, forKey: key)
            } else {
                try writer.set(value, forKey: key)
            }
            if stored && acknowledgements >= 0 {
                let line = Array("\(key) \(counter)\n".utf8)
                guard line.withUnsafeBytes({ write(acknowledgements, $0.baseAddress, $0.count) }) == line.count else {
                    throw ValidationError("cannot append to \(ackFile ?? ""): \(String(cString: strerror(errno)))")
                }
            }
            counter += 1
        }
    }
}

/// The storage `strata debug-writer` writes to: a disk folder, or a SQLite database in it.
private enum Writer {
    case disk(DiskStorage)
    case sqlite(SQLiteStorage)

    init(folder: String, sqlite: Bool, durable: Bool) throws {
        if sqlite {
            self = .sqlite(try SQLiteStorage(path: folder + "/values.sqlite"))
        } else {
            self = .disk(
                try DiskStorage(url: URL(fileURLWithPath: folder), options: DiskStorage.Options(isDurable: durable))
            )
        }
    }

    func set(_ value: Data, forKey key: String) throws {
        switch self {
        case .disk(let storage): try storage.set(value, forKey: key)
        case .sqlite(let storage): try storage.set(value, forKey: key)
        }
    }

    /// Stores `value` only if `key` has none, in one update; whether it did.
    func create(_ value: Data, forKey key: String) throws -> Bool {
        let body = { (current: inout Data?) -> Bool in
            guard current == nil else { return false }
            current = value
            return true
        }
        switch self {
        case .disk(let storage): return try storage.update(forKey: key, body)
        case .sqlite(let storage): return try storage.update(forKey: key, body)
        }
    }
}

/// The values `strata debug-writer` writes: a first line `key counter`, then 16 to 4,111 bytes
/// derived from the key and the counter, so a reader can rebuild the whole value from its first
/// line and tell a whole value from a torn or mixed one.
enum DebugValue {
    static func make(key: String, counter: Int) -> Data {
        var data = Data("\(key) \(counter)\n".utf8)
        let length = 16 + Int(UInt64(truncatingIfNeeded: counter) &* 2_654_435_761 % 4096)
        // FNV-1a of the key, mixed with the counter, seeds a SplitMix64 stream.
        var state = key.utf8.reduce(0xcbf2_9ce4_8422_2325 as UInt64) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
        state ^= UInt64(truncatingIfNeeded: counter)
        var filler = [UInt8]()
        filler.reserveCapacity(length + 8)
        while filler.count < length {
            state &+= 0x9E37_79B9_7F4A_7C15
            var mixed = state
            mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
            mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
            mixed ^= mixed >> 31
            withUnsafeBytes(of: mixed.littleEndian) { filler.append(contentsOf: $0) }
        }
        data.append(contentsOf: filler.prefix(length))
        return data
    }
}
