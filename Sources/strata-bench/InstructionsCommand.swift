import Foundation
import Strata
import StrataHTTP

/// `strata-bench instructions FIGURE COUNT`: runs COUNT operations of one read figure on the
/// calling thread, starting no other thread, for `valgrind --tool=callgrind`, whose instruction
/// counts repeat whatever else the machine does (wall-clock noise here is as large as the
/// differences measured). `scripts/instructions.sh` runs it at two counts and prints the
/// instructions per operation: the difference over the difference in counts, so that building
/// the data set cancels out.
///
/// Valgrind 3.19 reads neither Swift 6.3's DWARF 5 debug information (the script strips it from a
/// copy) nor a process with a second thread: every figure here reads synchronously or awaits
/// calls that never suspend, from the top-level code on the main thread. Valgrind also lacks
/// AVX-512, so a checksum counted here takes CRC-32C's three-stream path, not the folding one
/// this machine runs.
enum InstructionsCommand {
    static let usage = """
        USAGE: strata-bench instructions FIGURE COUNT

        Runs COUNT reads of FIGURE on the main thread, for callgrind. FIGURE is one of:
          memory.get.hit         MemoryStorage<String, Data>, unbounded, synchronous reads
          memory.mapped.get.hit  the same storage through mapKeys, mapValues both ways and
                                 mapValues to the byte count, awaited
          memory.get.hit.POLICY  reads of a storage bounded to the data set's size, evicting by
                                 POLICY (lru, w-tinylfu, s3-fifo or default), as the figure
          memory.set             synchronous sets of keys already stored, as the figure
          mutex-dictionary       the [String: Data] behind a lock that memory.get.hit is
                                 measured against
          disk.get.1k            synchronous reads of 1 KiB values from a DiskStorage whose
                                 files the page cache holds, as the figure (the system calls'
                                 own work is the kernel's, which callgrind does not count)
          raw-posix.get.1k       the open, fstat, read and close of the same files that
                                 disk.get.1k is measured against
          http.records.64k       synchronous reads and decodes of http.cache.hit.64k's
                                 records (64 KiB bodies) from its DiskStorage
          http.cache.64k         http.cache.hit.64k's hits: HTTPCache.value(for:) over the
                                 same records, awaited one after another off any actor
          raw-posix.get.64k      the raw reads of 64 KiB files http.cache.hit.64k is
                                 measured against
        """

    static let figures =
        [
            "memory.get.hit", "memory.mapped.get.hit", "memory.set", "mutex-dictionary", "disk.get.1k",
            "raw-posix.get.1k", "http.records.64k", "http.cache.64k", "raw-posix.get.64k",
        ]
        + Benchmark.policies.map { "memory.get.hit.\($0.name)" }

    /// Runs the command; returns the process's exit status.
    nonisolated(nonsending) static func run(arguments: [String]) async -> Int32 {
        guard arguments.count == 2, figures.contains(arguments[0]), let count = Int(arguments[1]), count >= 0 else {
            FileHandle.standardError.write(Data("\(usage)\n".utf8))
            return 2
        }
        let data = DataSet.standard
        let probes = data.randomIndices(count).map { data.keys[$0] }
        var sum = 0
        switch arguments[0] {
        case "memory.get.hit":
            let storage = MemoryStorage<String, Data>.filled(with: data)
            for key in probes { sum &+= storage.value(forKey: key)?.count ?? -1 }
        case "memory.mapped.get.hit":
            let storage = MemoryStorage<String, Data>.filled(with: data)
            let mapped =
                storage
                .mapKeys { (key: String) in key }
                .mapValues(reading: { $0 }, writing: { $0 })
                .mapValues { (value: Data) in value.count }
            do {
                for key in probes { sum &+= try await mapped.value(forKey: key) ?? -1 }
            } catch {
                FileHandle.standardError.write(Data("strata-bench: \(error)\n".utf8))
                return 1
            }
        case "memory.set":
            let storage = MemoryStorage<String, Data>.filled(with: data)
            let indices = data.randomIndices(count)
            for index in indices { storage.set(data.values[(index + 1) % data.count], forKey: data.keys[index]) }
            sum = storage.count
        case let figure where figure.hasPrefix("memory.get.hit."):
            let name = figure.dropFirst("memory.get.hit.".count)
            guard let policy = Benchmark.policies.first(where: { $0.name == name })?.policy else { return 2 }
            let storage = MemoryStorage<String, Data>(maximumCount: data.count, evictionPolicy: policy)
            for (key, value) in zip(data.keys, data.values) { storage.set(value, forKey: key) }
            for key in probes { sum &+= storage.value(forKey: key)?.count ?? -1 }
        case "disk.get.1k", "raw-posix.get.1k":
            let diskProbes = DataSet(count: Benchmark.diskSmallKeyCount, valueByteCount: 0).randomIndices(count)
            do {
                if arguments[0] == "disk.get.1k" {
                    let workload = try DiskSetWorkload(
                        name: "instructions-get-1k",
                        keyCount: Benchmark.diskSmallKeyCount,
                        valueSize: 1024
                    )
                    try workload.readAll(diskProbes)
                } else {
                    let raw = try RawFiles(
                        name: "instructions-raw-1k",
                        count: Benchmark.diskSmallKeyCount,
                        valueSize: 1024
                    )
                    try raw.readAll(diskProbes)
                }
            } catch {
                FileHandle.standardError.write(Data("strata-bench: \(error)\n".utf8))
                return 1
            }
        case "http.records.64k", "http.cache.64k", "raw-posix.get.64k":
            let httpProbes = DataSet(count: Benchmark.httpResponseCount, valueByteCount: 0).randomIndices(count)
            do {
                if arguments[0] == "http.records.64k" {
                    let (disk, urls) = try Benchmark.httpRecords(name: "instructions-http-64k")
                    try Benchmark.readSynchronously(disk, urls: urls, probes: httpProbes)
                } else if arguments[0] == "http.cache.64k" {
                    let (disk, urls) = try Benchmark.httpRecords(name: "instructions-http-cache-64k")
                    let cache = HTTPSource().cache(in: disk.httpCacheRecords())
                    try await Benchmark.readThroughCache(cache, urls: urls, probes: httpProbes)
                } else {
                    let raw = try RawFiles(
                        name: "instructions-raw-64k",
                        count: Benchmark.httpResponseCount,
                        valueSize: Benchmark.httpBodyByteCount
                    )
                    try raw.readAll(httpProbes)
                }
            } catch {
                FileHandle.standardError.write(Data("strata-bench: \(error)\n".utf8))
                return 1
            }
        default:
            let dictionary = MutexDictionary.filled(with: data)
            for key in probes { sum &+= dictionary.value(forKey: key)?.count ?? -1 }
        }
        blackHole(sum)
        return 0
    }
}
