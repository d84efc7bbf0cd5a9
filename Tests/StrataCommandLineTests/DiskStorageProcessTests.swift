import Foundation
import StrataSQLite
import StrataTestSupport
import Testing
import _StrataInternals

@testable import Strata

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Real processes on one folder: `strata debug-writer` children writing while this process reads,
/// and children killed with `SIGKILL` mid-write. A reader must only ever see whole values.
@Suite(.onTestThreads) struct DiskStorageProcessTests {
    private static let keyCount = 8

    private static func executable() throws -> URL {
        try #require(StrataExecutable.url(), "the strata executable is not built next to the tests")
    }

    /// Reads every writer key from `storage` and checks each value is whole and correct for its
    /// key; returns the counters found, by key.
    private static func checkValues(in storage: DiskStorage) throws -> [String: Int] {
        var counters: [String: Int] = [:]
        for index in 0..<keyCount {
            let key = "key-\(index)"
            guard let value = try storage.value(forKey: key) else { continue }
            let counter = WrittenValue.counter(of: value, key: key)
            #expect(counter != nil, "\(key) read \(value.count) bytes that the writer never wrote whole")
            counters[key] = counter
        }
        return counters
    }

    /// The highest counter acknowledged for each key in an acknowledgement file; a last line cut
    /// short by the kill is ignored.
    private static func acknowledgedCounters(_ url: URL) -> [String: Int] {
        guard let data = FileManager.default.contents(atPath: url.path) else { return [:] }
        var counters: [String: Int] = [:]
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
            .dropLast()
        {
            let fields = line.split(separator: " ")
            guard fields.count == 2, let counter = Int(fields[1]) else { continue }
            counters[String(fields[0]), default: 0] = max(counters[String(fields[0]), default: 0], counter)
        }
        return counters
    }

    @Test func twoWritersAndAReaderOnOneFolderNeverSeeATornOrWrongValue() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let root = folder.child("store")
        let reader = try DiskStorage(url: root, options: DiskStorage.Options(mode: .store))
        let executable = try Self.executable()
        let secondWriterStart = 1_000_000_000
        var writers: [WriterProcess] = []
        for (index, first) in [1, secondWriterStart].enumerated() {
            let arguments = [
                "--folder", root.path, "--keys", "\(Self.keyCount)", "--iterations", "0",
                "--first-counter", "\(first)", "--ack-file", folder.url.appendingPathComponent("acks-\(index)").path,
            ]
            writers.append(try await WriterProcess(executable, arguments: arguments))
        }
        var checked = 0
        var seen: Set<Int> = []

        // Both writers write the same keys the whole time this reads them.
        for _ in 0..<300 {
            let counters = try await TestThreads.run { () throws in try Self.checkValues(in: reader) }
            checked += counters.count
            seen.formUnion(counters.values)
            await Task.yield()
        }
        let stillRunning = writers.allSatisfy(\.isRunning)
        for writer in writers { writer.crash() }
        for writer in writers { _ = await writer.waitForExit() }

        #expect(stillRunning, "both writers wrote until the reader was done")
        #expect(seen.contains { $0 < secondWriterStart } && seen.contains { $0 >= secondWriterStart })
        #expect(seen.count > 100, "the reader saw the values change")
        let reopened = try DiskStorage(url: root, options: DiskStorage.Options(mode: .store))
        #expect(try Self.checkValues(in: reopened).count == Self.keyCount)
        #expect(try reopened.verify().isSound)
        print(
            "DiskStorageProcessTests: checked \(checked) values (\(seen.count) distinct) while two writers wrote"
        )
    }

    /// Every line of an acknowledgement file: `(key, counter)`.
    private static func acknowledgements(_ url: URL) -> [(key: String, counter: Int)] {
        guard let data = FileManager.default.contents(atPath: url.path) else { return [] }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ")
            guard fields.count == 2, let counter = Int(fields[1]) else { return nil }
            return (String(fields[0]), counter)
        }
    }

    /// Two processes create the same keys at the same moments, as two servers' `create` would:
    /// each key is created by exactly one of them, and holds that one's value. Before writers
    /// took the folder's lock files, both could find a key missing and both "create" it.
    @Test func createsInTwoProcessesOnOneFolderStoreEachKeyOnce() async throws {
        // Two processes started together may still drift apart and meet on few keys: four rounds.
        for round in 0..<4 {
            try await Self.createInTwoProcesses(round: round, keys: 1_000, sqlite: false)
        }
    }

    /// The same with SQLite: its updates are `BEGIN IMMEDIATE` transactions, which the database
    /// file's lock serializes across processes.
    @Test func createsInTwoProcessesOnOneSQLiteDatabaseStoreEachKeyOnce() async throws {
        for round in 0..<2 {
            try await Self.createInTwoProcesses(round: round, keys: 1_000, sqlite: true)
        }
    }

    private static func createInTwoProcesses(round: Int, keys: Int, sqlite: Bool) async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let root = folder.child("store")
        if sqlite {
            try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
            _ = try SQLiteStorage(path: root.path + "/values.sqlite")
        } else {
            _ = try DiskStorage(url: root)
        }
        let executable = try Self.executable()
        let start = folder.url.appendingPathComponent("start")
        let secondWriterStart = 1_000_000_000
        var writers: [WriterProcess] = []
        for (index, first) in [keys, secondWriterStart + keys].enumerated() {
            let arguments =
                [
                    "--folder", root.path, "--keys", "\(keys)", "--iterations", "\(keys)", "--create",
                    "--first-counter", "\(first)", "--start-file", start.path,
                    "--ack-file", folder.url.appendingPathComponent("acks-\(index)").path,
                ] + (sqlite ? ["--sqlite"] : [])
            writers.append(try await WriterProcess(executable, arguments: arguments))
        }
        _ = FileManager.default.createFile(atPath: start.path, contents: Data())
        for writer in writers {
            let ending = await writer.waitForExit()
            #expect(ending == .exited(0), "round \(round): a creating writer ended with \(ending)")
        }

        let created = (0..<2).flatMap { Self.acknowledgements(folder.url.appendingPathComponent("acks-\($0)")) }
        var creators: [String: [Int]] = [:]
        for (key, counter) in created { creators[key, default: []].append(counter) }
        let twice = creators.filter { $0.value.count > 1 }.keys.sorted()
        #expect(twice.isEmpty, "round \(round): \(twice.count) keys were created by both processes: \(twice.prefix(5))")
        #expect(creators.count == keys, "round \(round): \(creators.count) of \(keys) keys were created")
        let storage: any ReadableStorage<String, Data> =
            sqlite
            ? try SQLiteStorage(path: root.path + "/values.sqlite")
            : try DiskStorage(url: root, options: DiskStorage.Options(mode: .store))
        var wrong = 0
        for (key, counters) in creators where counters.count == 1 {
            let value = try await storage.value(forKey: key)
            if value.flatMap({ WrittenValue.counter(of: $0, key: key) }) != counters[0] { wrong += 1 }
        }
        #expect(wrong == 0, "round \(round): \(wrong) keys hold another value than their creator's")
        let first = creators.values.filter { $0.count == 1 && $0[0] < secondWriterStart }.count
        print(
            "DiskStorageProcessTests: \(sqlite ? "SQLite" : "disk") round \(round), of \(keys) keys the first process created \(first)"
        )
    }

    @Test(arguments: [false, true])
    func valuesSurviveAWriterKilledAtRandomMoments(durable: Bool) async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let root = folder.child("store")
        let acknowledgements = folder.url.appendingPathComponent("acknowledged")
        _ = try DiskStorage(url: root)
        let executable = try Self.executable()
        var generator = SeededRandomNumberGenerator(seed: durable ? 1 : 2)
        let kills = 100
        var checked = 0

        for kill in 0..<kills {
            var arguments = [
                "--folder", root.path, "--keys", "\(Self.keyCount)", "--iterations", "0",
                "--first-counter", "\(kill * 10_000_000 + 1)", "--ack-file", acknowledgements.path,
            ]
            if durable { arguments.append("--durable") }
            let writer = try await WriterProcess(executable, arguments: arguments)
            try await Task.sleep(for: .milliseconds(Int.random(in: 5...50, using: &generator)))
            writer.crash()
            let status = await writer.waitForExit()

            #expect(status == .signaled(SIGKILL), "the writer was killed, not finished")
            // Opening, reading every value and parsing the acknowledgements block on files: on
            // the tests' own threads, never the cooperative pool.
            let (reopened, temporaries, counters, acknowledged) = try await TestThreads.run { () throws in
                let reopened = try DiskStorage(url: root, options: DiskStorage.Options(mode: .store))
                return (
                    reopened, StoreFiles(of: root).temporaries, try Self.checkValues(in: reopened),
                    Self.acknowledgedCounters(acknowledgements)
                )
            }
            #expect(temporaries.isEmpty, "opening removes a dead writer's temporary file")
            checked += counters.count
            for (key, acknowledged) in acknowledged {
                #expect(
                    (counters[key] ?? 0) >= acknowledged,
                    "kill \(kill): \(key) was acknowledged at \(acknowledged), reads \(String(describing: counters[key]))"
                )
            }
            #expect(try await TestThreads.run { () throws(StorageError) in try reopened.verify().isSound })
        }

        let acknowledged = Self.acknowledgedCounters(acknowledgements)
        #expect(acknowledged.count == Self.keyCount)
        print(
            "DiskStorageProcessTests: \(kills) kills (durable: \(durable)), \(checked) values checked whole, "
                + "\(acknowledged.count) keys acknowledged"
        )
    }

    @Test func verifyCommandListsDamagedFilesAndExitsNonZero() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let storage = try DiskStorage(url: folder.url)
        try await storage.set(Data("sound".utf8), forKey: "sound")
        try await storage.set(Data("damaged".utf8), forKey: "damaged")
        let sound = try await Self.run(["verify", "--folder", folder.path])
        let path = folder.path + "/" + relativePath(forKey: "damaged")
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        bytes[bytes.count - 1] ^= 1
        try Data(bytes).write(to: URL(fileURLWithPath: path))

        let damaged = try await Self.run(["verify", "--folder", folder.path])

        #expect(sound.status == 0)
        #expect(damaged.status == 1)
        #expect(damaged.output.contains("DAMAGED \(path)"))
        #expect(damaged.output.contains("2 files checked, 1 damaged"))
    }

    @Test func verifyShowsProgressOnATerminalAndNothingElsewhere() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let storage = try DiskStorage(url: folder.url)
        for index in 0..<50 { try await storage.set(Data("value \(index)".utf8), forKey: "k\(index)") }
        let executable = try Self.executable().path

        // `script` runs the command on a pseudo-terminal and copies what it wrote.
        let onTerminal = await Shell.run([
            "/usr/bin/script", "-qefc", "'\(executable)' verify --folder '\(folder.path)'", "/dev/null",
        ])
        let redirected = await Shell.run([executable, "verify", "--folder", folder.path])

        #expect(onTerminal.status == 0, "\(onTerminal.output)\(onTerminal.errors)")
        #expect(onTerminal.output.contains("verifying \(folder.path)"), "\(onTerminal.output)")
        #expect(onTerminal.output.contains("\u{1B}[K"), "the progress line is erased when the step ends")
        #expect(onTerminal.output.contains("50 files checked, 0 damaged"))
        #expect(redirected.status == 0)
        #expect(!redirected.errors.contains("verifying"), "no progress in redirected output: \(redirected.errors)")
        #expect(redirected.output == "50 files checked, 0 damaged\n")
    }

    /// Runs `strata` with `arguments` to the end; returns its exit status and standard output.
    private static func run(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        let result = await Shell.run([try executable().path] + arguments)
        return (result.status, result.output)
    }
}
