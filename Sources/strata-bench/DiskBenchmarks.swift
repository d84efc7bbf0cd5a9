import Foundation
import Strata
import _StrataInternals

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The figures for ``DiskStorage``, each against raw POSIX calls on the same kind of files in the
/// same run: a set is `open`/`write`/`close` of a temporary file and a `rename` over the value's
/// file, a get is `open`/`fstat`/`read`/`close` into a new buffer, both in a sharded layout
/// (`x/yz/<32 hex>`, the layout of earlier versions) whose paths the baseline gets precomputed. Opening a folder is compared with
/// a bare recursive walk that reads each file's first 64 bytes.
///
/// Disk figures follow the machine's rule for file systems that slow down after deletions: no
/// figure deletes files between its rounds other than what its operations do themselves (a
/// `rename` over a file, an eviction), subject and baseline rounds are interleaved so both see the
/// same state, and every file stays until the process exits (see ``DiskBenchmarkFolder``).
extension Benchmark {
    /// Keys of the 1 KiB figures: each set round overwrites every one of them once.
    static let diskSmallKeyCount = 2_000
    /// Reads per round of `disk.get.1k`.
    static let diskSmallReads = 20_000
    /// Keys of the 1 MiB figures.
    static let diskLargeKeyCount = 32
    /// Reads per round of `disk.get.1m`.
    static let diskLargeReads = 128
    /// Entries of the folder `disk.open.100k` opens.
    static let diskOpenEntryCount = 100_000

    static var disk: [Benchmark] {
        // Opening first: it creates 100,000 files, fastest before any figure has deleted one.
        [
            diskOpen, diskOpenSnapshot, diskSet1k, diskSet1kFresh, diskGet1k, diskGet1kAsync, diskGet1kAsyncHop,
            diskSet1m, diskGet1m,
            diskSetEvicting,
            diskChecksum,
        ]
    }

    /// The payload checksum of disk format version 2 (CRC-32C, on the processor's instructions
    /// where it has them, folded with AVX-512 where it has that) over 1 MiB, against version 1's
    /// xxHash64 over the same bytes: what checking a value adds to `disk.get.1m`. The goals print
    /// both as GB/s.
    static var diskChecksum: Benchmark {
        Benchmark(name: "disk.checksum.1m", baseline: "xxhash64") {
            let bytes = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 7) }
            let repeats = 64
            return Workloads(
                operations: repeats,
                subject: {
                    var sum: UInt32 = 0
                    bytes.withUnsafeBytes { buffer in
                        for _ in 0..<repeats { sum ^= CRC32C.checksum(buffer) }
                    }
                    blackHole(Int(sum))
                },
                baseline: {
                    var sum: UInt64 = 0
                    bytes.withUnsafeBytes { buffer in
                        for _ in 0..<repeats { sum ^= XXHash64.hash(buffer) }
                    }
                    blackHole(Int(truncatingIfNeeded: sum))
                }
            )
        }
    }

    static var diskSet1k: Benchmark {
        diskSet(named: "disk.set.1k", folder: "set-1k", keyCount: diskSmallKeyCount, valueSize: 1024)
    }

    /// Overwrites of every one of `keyCount` keys in a random order, each with a `valueSize`-byte
    /// value, in the folders `folder` and `raw-<folder>`.
    private static func diskSet(named name: String, folder: String, keyCount: Int, valueSize: Int) -> Benchmark {
        Benchmark(name: name, baseline: RawFiles.name) {
            let subject = try DiskSetWorkload(name: folder, keyCount: keyCount, valueSize: valueSize)
            let raw = try RawFiles(name: "raw-\(folder)", count: keyCount, valueSize: valueSize)
            let order = shuffled(keyCount)
            let kept = [try KeptFiles(subject.folder), try KeptFiles(raw.root)]
            return Workloads(
                operations: order.count,
                subject: { try subject.setAll(order) },
                baseline: { try raw.setAll(order) },
                beforeRound: { try kept[$0].keep() }
            )
        }
    }

    /// Sets of 1 KiB values into a store opened on a new folder in the same round (the open
    /// included), every key new: what a freshly installed app's cache pays for its first writes,
    /// folders included. The baseline writes as many new files into folders that already exist.
    static var diskSet1kFresh: Benchmark {
        Benchmark(name: "disk.set.1k.fresh", baseline: RawFiles.name) {
            let keyCount = diskSmallKeyCount
            let keys = (0..<keyCount).map { "key-\($0)" }
            let value = Data((0..<1024).map { UInt8(truncatingIfNeeded: $0 &* 31) })
            let raw = try RawFiles(name: "raw-set-1k-fresh", count: keyCount, valueSize: 1024, writing: false)
            let rounds = Counter()
            return Workloads(
                operations: keyCount,
                subject: {
                    let storage = try DiskStorage(url: try DiskBenchmarkFolder.make("set-1k-fresh-\(rounds.next())"))
                    for key in keys {
                        try storage.set(value, forKey: key)
                    }
                },
                baseline: { try raw.setAllNew(suffix: "-\(rounds.next())") }
            )
        }
    }

    static var diskGet1k: Benchmark {
        diskGet(
            named: "disk.get.1k",
            folder: "get-1k",
            keyCount: diskSmallKeyCount,
            valueSize: 1024,
            reads: diskSmallReads
        )
    }

    /// `reads` reads of random keys among `keyCount` keys, each holding a `valueSize`-byte value,
    /// in the folders `folder` and `raw-<folder>`.
    private static func diskGet(
        named name: String,
        folder: String,
        keyCount: Int,
        valueSize: Int,
        reads: Int
    ) -> Benchmark {
        Benchmark(name: name, baseline: RawFiles.name) {
            let subject = try DiskSetWorkload(name: folder, keyCount: keyCount, valueSize: valueSize)
            let raw = try RawFiles(name: "raw-\(folder)", count: keyCount, valueSize: valueSize)
            let probes = DataSet(count: keyCount, valueByteCount: 0).randomIndices(reads)
            return Workloads(
                operations: probes.count,
                subject: { try subject.readAll(probes) },
                baseline: { try raw.readAll(probes) }
            )
        }
    }

    /// The reads of `disk.get.1k` through the async `value(forKey:)` with the default options,
    /// awaited one after another from a task on no actor, as a server's handler reads: the page
    /// cache holds every file, so each read is made in place, on the caller's thread. The same
    /// storage read synchronously (as `disk.get.1k` does) runs in the same rounds as the
    /// reference.
    static var diskGet1kAsync: Benchmark {
        diskGet1kAsync(readsInPlace: true)
    }

    /// `disk.get.1k.async` without `Options.readsInPlace`: each read hops to Strata's I/O threads
    /// and back, as every read of a caller on an actor does, so the difference from the reference
    /// is what the hop costs.
    static var diskGet1kAsyncHop: Benchmark {
        diskGet1kAsync(readsInPlace: false)
    }

    private static func diskGet1kAsync(readsInPlace: Bool) -> Benchmark {
        let suffix = readsInPlace ? "" : ".hop"
        return Benchmark(name: "disk.get.1k.async" + suffix, baseline: RawFiles.name) {
            let subject = try DiskSetWorkload(
                name: "get-1k-async" + suffix,
                keyCount: diskSmallKeyCount,
                valueSize: 1024,
                readsInPlace: readsInPlace
            )
            let raw = try RawFiles(name: "raw-get-1k-async" + suffix, count: diskSmallKeyCount, valueSize: 1024)
            let probes = DataSet(count: diskSmallKeyCount, valueByteCount: 0).randomIndices(diskSmallReads)
            return Workloads(
                operations: probes.count,
                subject: { try await subject.readAllAsync(probes) },
                baseline: { try raw.readAll(probes) },
                reference: ("disk.get.1k", { try subject.readAll(probes) })
            )
        }
    }

    static var diskSet1m: Benchmark {
        diskSet(named: "disk.set.1m", folder: "set-1m", keyCount: diskLargeKeyCount, valueSize: 1 << 20)
    }

    static var diskGet1m: Benchmark {
        diskGet(
            named: "disk.get.1m",
            folder: "get-1m",
            keyCount: diskLargeKeyCount,
            valueSize: 1 << 20,
            reads: diskLargeReads
        )
    }

    /// Sets of 1 KiB values into a storage at its byte limit, each of a key it does not hold, so
    /// every set writes a new file and evicts the least recently used one. The baseline is the
    /// workload of `disk.set.1k` (overwriting, no eviction), in the same rounds.
    static var diskSetEvicting: Benchmark {
        Benchmark(name: "disk.set.evicting", baseline: "disk.set.1k") {
            let keyCount = diskSmallKeyCount
            // Room for half the keys: cycling through all of them, each set is of an absent key.
            let recordSize = 56 + "key-0000".utf8.count + 1024
            let evicting = try DiskSetWorkload(
                name: "set-evicting",
                keyCount: keyCount,
                valueSize: 1024,
                maximumByteCount: keyCount / 2 * recordSize
            )
            let overwriting = try DiskSetWorkload(name: "set-overwriting", keyCount: keyCount, valueSize: 1024)
            let order = Array(0..<keyCount)
            let kept = [try KeptFiles(evicting.folder), try KeptFiles(overwriting.folder)]
            return Workloads(
                operations: order.count,
                subject: { try evicting.setAll(order) },
                baseline: { try overwriting.setAll(order) },
                beforeRound: { try kept[$0].keep() }
            )
        }
    }

    /// Opening a folder of 100,000 small values (building the index from every file's header),
    /// per entry, against a recursive walk of the same folder that reads each file's first 64
    /// bytes.
    static var diskOpen: Benchmark {
        Benchmark(name: "disk.open.100k", baseline: "walk-read-64") {
            let folder = try DiskBenchmarkFolder.make("open-100k")
            let storage = try DiskStorage(url: folder)
            let value = Data(repeating: 7, count: 100)
            for index in 0..<diskOpenEntryCount {
                try storage.set(value, forKey: "key-\(index)")
            }
            let count = diskOpenEntryCount
            // Every file's header read: the snapshot the storage saved while filling is ignored.
            var options = DiskStorage.Options()
            options.savesIndexSnapshots = false
            return Workloads(
                operations: count,
                subject: {
                    let opened = try DiskStorage(url: folder, options: options)
                    guard opened.count == count else { throw BenchmarkFailure("opened \(opened.count) of \(count)") }
                    blackHole(opened.count)
                },
                baseline: {
                    // The value files, the manifest and the snapshot.
                    let files = try walkReadingPrefixes(folder.path, prefixLength: 64)
                    guard files >= count + 1 else { throw BenchmarkFailure("walked \(files) of \(count + 1)") }
                    blackHole(files)
                }
            )
        }
    }

    /// Opening the folder of `disk.open.100k` from a valid index snapshot (every value folder
    /// unchanged since it was saved), against the walk that reads each file's first 64 bytes: the
    /// open lists every folder (to check it against the snapshot) but reads no file.
    static var diskOpenSnapshot: Benchmark {
        Benchmark(name: "disk.open.100k.snapshot", baseline: "walk-read-64") {
            let folder = DiskBenchmarkFolder.root.appendingPathComponent("open-100k")
            let count = diskOpenEntryCount
            // The folder of `disk.open.100k`, which runs first; made here when it runs alone.
            func fill() throws {
                let storage = try DiskStorage(url: try DiskBenchmarkFolder.make("open-100k"))
                let value = Data(repeating: 7, count: 100)
                for index in 0..<count {
                    try storage.set(value, forKey: "key-\(index)")
                }
            }
            if !FileManager.default.fileExists(atPath: folder.appendingPathComponent(DiskStorage.manifestName).path) {
                try fill()
            }
            // Past the second within which a changed folder could keep its time, so that every
            // folder is trusted.
            try await Task.sleep(for: .seconds(1.1))
            try await DiskStorage(url: folder).saveIndex()
            return Workloads(
                operations: count,
                subject: {
                    let opened = try DiskStorage(url: folder)
                    guard opened.count == count else { throw BenchmarkFailure("opened \(opened.count) of \(count)") }
                    guard opened.openedFolders.read == 0 else {
                        throw BenchmarkFailure("\(opened.openedFolders.read) folders were read file by file")
                    }
                },
                baseline: {
                    let files = try walkReadingPrefixes(folder.path, prefixLength: 64)
                    guard files >= count + 1 else { throw BenchmarkFailure("walked \(files) of \(count + 1)") }
                    blackHole(files)
                }
            )
        }
    }

    /// `0..<count` in a fixed random-looking order.
    private static func shuffled(_ count: Int) -> [Int] {
        var generator = SplitMix64(seed: 0xD15C)
        return Array(0..<count).shuffled(using: &generator)
    }
}

// MARK: Workloads

/// A ``DiskStorage`` in a folder of its own, filled with one value per key.
struct DiskSetWorkload {
    let folder: URL
    let storage: DiskStorage
    let keys: [String]
    let value: Data

    init(name: String, keyCount: Int, valueSize: Int, maximumByteCount: Int? = nil, readsInPlace: Bool = false) throws {
        var options = DiskStorage.Options(maximumByteCount: maximumByteCount)
        options.readsInPlace = readsInPlace
        folder = try DiskBenchmarkFolder.make(name)
        storage = try DiskStorage(url: folder, options: options)
        keys = (0..<keyCount).map { "key-" + String(repeating: "0", count: max(0, 4 - "\($0)".count)) + "\($0)" }
        value = Data((0..<valueSize).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        // A storage at its limit holds the last keys: the first set of a round evicts at once.
        for key in keys {
            try storage.set(value, forKey: key)
        }
    }

    func setAll(_ order: [Int]) throws {
        for index in order {
            try storage.set(value, forKey: keys[index])
        }
    }

    func readAll(_ order: [Int]) throws {
        var sum = 0
        for index in order {
            sum &+= try storage.value(forKey: keys[index])?.count ?? -1
        }
        blackHole(sum)
    }

    // `@concurrent` for the reason given at `memory.mapped.get.hit`'s loop: the loop runs on the
    // global executor as a server task would, and pays no hop back after each `await` other than
    // the one back from the I/O threads that the figure measures.
    @concurrent
    func readAllAsync(_ order: [Int]) async throws(StorageError) {
        var sum = 0
        for index in order {
            sum &+= try await storage.value(forKey: keys[index])?.count ?? -1
        }
        blackHole(sum)
    }
}

/// The baseline: values in files of a sharded layout, written and read with bare system calls.
struct RawFiles {
    static let name = "raw-posix"

    let root: URL
    let paths: [String]
    let temporaryPaths: [String]
    let value: [UInt8]

    init(name: String, count: Int, valueSize: Int, writing: Bool = true) throws {
        self.root = try DiskBenchmarkFolder.make(name)
        let root = self.root.path
        var generator = SplitMix64(seed: 0xF11E)
        var paths: [String] = []
        var temporaryPaths: [String] = []
        for _ in 0..<count {
            let hex = (0..<2).map { _ in String(generator.next(), radix: 16) }.joined()
            let name = String(repeating: "0", count: max(0, 32 - hex.count)) + hex
            let folder = "\(root)/\(name.prefix(1))/\(name.dropFirst().prefix(2))"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            paths.append("\(folder)/\(name)")
            temporaryPaths.append("\(folder)/.tmp-\(name)")
        }
        self.paths = paths
        self.temporaryPaths = temporaryPaths
        value = (0..<valueSize).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        if writing { try setAll(Array(0..<count)) }
    }

    /// Writes every value as a new file, as ``setAll(_:)`` does (a temporary file renamed into
    /// place) but at its path with `suffix` added, so no file is replaced.
    func setAllNew(suffix: String) throws {
        for index in paths.indices {
            let temporary = temporaryPaths[index] + suffix
            let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            guard descriptor >= 0 else { throw BenchmarkFailure.system("open", temporary) }
            let result = value.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            guard result == value.count else { throw BenchmarkFailure.system("write", temporary) }
            guard close(descriptor) == 0 else { throw BenchmarkFailure.system("close", temporary) }
            let path = paths[index] + suffix
            guard rename(temporary, path) == 0 else { throw BenchmarkFailure.system("rename", path) }
        }
    }

    func setAll(_ order: [Int]) throws {
        for index in order {
            let temporary = temporaryPaths[index]
            let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            guard descriptor >= 0 else { throw BenchmarkFailure.system("open", temporary) }
            var written = 0
            while written < value.count {
                let result = value.withUnsafeBytes { bytes in
                    write(descriptor, bytes.baseAddress.map { $0 + written }, bytes.count - written)
                }
                guard result > 0 else { throw BenchmarkFailure.system("write", temporary) }
                written += result
            }
            guard close(descriptor) == 0 else { throw BenchmarkFailure.system("close", temporary) }
            guard rename(temporary, paths[index]) == 0 else { throw BenchmarkFailure.system("rename", temporary) }
        }
    }

    func readAll(_ order: [Int]) throws {
        var sum = 0
        for index in order {
            let path = paths[index]
            let descriptor = open(path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { throw BenchmarkFailure.system("open", path) }
            var info = stat()
            guard fstat(descriptor, &info) == 0 else { throw BenchmarkFailure.system("fstat", path) }
            let size = Int(info.st_size)
            // A new buffer per read, as a get that returns the value must allocate one.
            let bytes = [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
                var offset = 0
                while offset < size, let base = buffer.baseAddress {
                    let result = read(descriptor, base + offset, size - offset)
                    if result <= 0 { break }
                    offset += result
                }
                initialized = offset
            }
            close(descriptor)
            sum &+= bytes.count
        }
        blackHole(sum)
    }
}

/// Walks `path` recursively with `opendir`/`readdir`, reading the first `prefixLength` bytes of
/// every regular file; returns how many files it read.
private func walkReadingPrefixes(_ path: String, prefixLength: Int) throws -> Int {
    guard let directory = opendir(path) else { throw BenchmarkFailure.system("opendir", path) }
    defer { closedir(directory) }
    var files = 0
    var buffer = [UInt8](repeating: 0, count: prefixLength)
    while let entry = readdir(directory) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        if name == "." || name == ".." { continue }
        let child = path + "/" + name
        if Int32(entry.pointee.d_type) == Int32(DT_DIR) {
            files += try walkReadingPrefixes(child, prefixLength: prefixLength)
        } else {
            let descriptor = open(child, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { throw BenchmarkFailure.system("open", child) }
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, prefixLength) }
            close(descriptor)
            if count >= 0 { files += 1 }
        }
    }
    return files
}

/// A count shared by a figure's rounds, for names no earlier round used.
final class Counter: @unchecked Sendable {
    private var value = 0

    /// The next number, from 0. Rounds run one at a time.
    func next() -> Int {
        value += 1
        return value - 1
    }
}

// MARK: Folders

/// Keeps the files of a folder alive until the run ends, so that the writes measured next free no
/// inode: ``keep()`` gives every file in the folder a second name in a folder of its own (a hard
/// link), so a write that replaces or an eviction that removes a file only drops a name.
///
/// On this machine's ext4, without a journal, creating a file first passes over the inodes freed
/// recently (the kernel's `recently_deleted` check): a raw 1 KiB write measured 150–480 µs in
/// rounds that overwrote thousands of files, against 50–65 µs where nothing had been freed. That
/// cost lands on whichever side writes after the other's deletions, so overwriting figures keep
/// their files and free them when the run's folder is removed at exit. Files freed before the run
/// (by an earlier run, or anything else on the machine) still slow its creates.
final class KeptFiles: @unchecked Sendable {
    private let folder: String
    private let keeping: String
    private var kept = 0

    init(_ folder: URL) throws {
        self.folder = folder.path
        keeping = try DiskBenchmarkFolder.make(folder.lastPathComponent + "-kept").path
    }

    /// Links every regular file under the folder into the keeping folder.
    func keep() throws {
        var linked = 0
        guard let walker = FileManager.default.enumerator(atPath: folder) else {
            throw BenchmarkFailure("cannot list \(folder)")
        }
        while let relative = walker.nextObject() as? String {
            let path = folder + "/" + relative
            var info = stat()
            guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { continue }
            let name = keeping + "/\(kept)"
            if link(path, name) == 0 {
                kept += 1
                linked += 1
            } else if errno != ENOENT {
                // ENOENT: a file removed since it was listed (a temporary one) has nothing to keep.
                throw BenchmarkFailure.system("link", path)
            }
        }
        guard linked > 0 else { throw BenchmarkFailure("no file to keep in \(folder)") }
    }
}

/// The folder that holds every disk figure's files for one run, under the system's temporary
/// folder, removed when the process exits (never between rounds).
enum DiskBenchmarkFolder {
    static let root: URL = {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("strata-bench-\(getpid())", isDirectory: true)
        atexit {
            try? FileManager.default.removeItem(at: DiskBenchmarkFolder.root)
        }
        return url
    }()

    /// A new, empty folder for one figure.
    static func make(_ name: String) throws -> URL {
        let url = root.appendingPathComponent(name, isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}

/// A figure that could not be measured.
struct BenchmarkFailure: Error, CustomStringConvertible {
    var description: String

    init(_ description: String) {
        self.description = description
    }

    static func system(_ call: String, _ path: String) -> BenchmarkFailure {
        BenchmarkFailure("\(call)(\(path)): \(String(cString: strerror(errno)))")
    }
}

// MARK: Goals

extension Goal {
    /// What `DiskStorage` aims for, from the issue that asked for it.
    static var disk: [Goal] {
        let limits: [(String, Double)] = [
            ("disk.set.1k", 1.1), ("disk.set.1k.fresh", 1.2), ("disk.get.1k", 1.1), ("disk.get.1k.async", 1.5),
            ("disk.get.1k.async.hop", 1.5),
            ("disk.set.1m", 1.2),
            ("disk.get.1m", 1.2), ("disk.open.100k", 1.5), ("disk.set.evicting", 1.3),
        ]
        let ratios = limits.map { Goal.ratio(of: $0, atMost: $1) }
        let checksum = Goal(description: "disk.checksum.1m faster than xxHash64") { results in
            results["disk.checksum.1m"].map { result in
                let gigabytes = { (nanoseconds: Double) in Double(1 << 20) / nanoseconds }
                let hardware =
                    CRC32C.folds
                    ? "AVX-512 folding" : CRC32C.isHardwareAccelerated ? "processor's instructions" : "portable tables"
                return (
                    result.ratio < 1,
                    "CRC-32C \(format(gigabytes(result.nanosecondsPerOperation), 1)) GB/s (\(hardware)), "
                        + "xxHash64 \(format(gigabytes(result.baselineNanosecondsPerOperation), 1)) GB/s"
                )
            }
        }
        let snapshot = Goal(description: "disk.open.100k.snapshot <= 100 ms") { results in
            results["disk.open.100k.snapshot"].map { result in
                let milliseconds = result.nanosecondsPerOperation * Double(Benchmark.diskOpenEntryCount) / 1e6
                return (milliseconds <= 100, "\(format(milliseconds, 1)) ms, ratio \(format(result.ratio, 2))")
            }
        }
        return ratios + [checksum, snapshot]
    }
}
