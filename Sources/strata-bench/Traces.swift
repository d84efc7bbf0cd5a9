import Foundation
import _StrataInternals

/// A sequence of key requests replayed through caches by `strata-bench hitrate`.
///
/// The synthetic traces reproduce the definitions of `HITRATES.md`: Zipf-distributed requests over
/// 100,000 keys (ranks mapped to keys by a random permutation), the same with scans or with a
/// popularity shift, and a loop slightly larger than the cache. Two more families stress recency:
/// one-off keys a third of which come back shortly after (`rereference`), and keys whose
/// popularity falls with their age (`recency`). Every trace is generated from a fixed seed, so
/// runs are comparable.
struct Trace {
    /// The trace's name in tables and JSON, such as `zipf0.8+scans`.
    var name: String
    /// The requested keys, in order.
    var keys: [Int]
    /// The number of distinct keys the cache sizes are relative to.
    var keySpace: Int

    /// The number of keys in the synthetic traces' universe.
    static let syntheticKeySpace = 100_000
    /// The number of requests in the synthetic traces, scans excluded.
    static let syntheticRequestCount = 1_000_000

    /// Zipf(`exponent`) requests over the synthetic key space.
    static func zipf(_ exponent: Double, seed: UInt64 = 1) -> Trace {
        var random = TraceRandom(seed: seed)
        let sampler = ZipfSampler(count: syntheticKeySpace, exponent: exponent)
        let permutation = TraceRandom.permutation(syntheticKeySpace, using: &random)
        var keys: [Int] = []
        keys.reserveCapacity(syntheticRequestCount)
        for _ in 0..<syntheticRequestCount {
            keys.append(permutation[sampler.rank(&random)])
        }
        return Trace(name: "zipf\(exponent)", keys: keys, keySpace: syntheticKeySpace)
    }

    /// Zipf 0.8 with a scan of 20,000 keys never requested before or after inserted after every
    /// 100,000 requests.
    static func zipfWithScans(seed: UInt64 = 2) -> Trace {
        var random = TraceRandom(seed: seed)
        let sampler = ZipfSampler(count: syntheticKeySpace, exponent: 0.8)
        let permutation = TraceRandom.permutation(syntheticKeySpace, using: &random)
        var keys: [Int] = []
        keys.reserveCapacity(syntheticRequestCount * 6 / 5)
        var nextScanKey = syntheticKeySpace
        for request in 1...syntheticRequestCount {
            keys.append(permutation[sampler.rank(&random)])
            if request % 100_000 == 0 {
                for _ in 0..<20_000 {
                    keys.append(nextScanKey)
                    nextScanKey += 1
                }
            }
        }
        return Trace(name: "zipf0.8+scans", keys: keys, keySpace: syntheticKeySpace)
    }

    /// Zipf 0.8 whose popularity ranking is replaced by a new random permutation halfway through.
    static func shift(seed: UInt64 = 3) -> Trace {
        var random = TraceRandom(seed: seed)
        let sampler = ZipfSampler(count: syntheticKeySpace, exponent: 0.8)
        var permutation = TraceRandom.permutation(syntheticKeySpace, using: &random)
        var keys: [Int] = []
        keys.reserveCapacity(syntheticRequestCount)
        for request in 0..<syntheticRequestCount {
            if request == syntheticRequestCount / 2 {
                permutation = TraceRandom.permutation(syntheticKeySpace, using: &random)
            }
            keys.append(permutation[sampler.rank(&random)])
        }
        return Trace(name: "shift0.8", keys: keys, keySpace: syntheticKeySpace)
    }

    /// Keys 0, 1, …, L − 1 repeated, with L = ⌈1.1 × `cacheSize`⌉, over the synthetic key space.
    static func loop(cacheSize: Int) -> Trace {
        let length = (cacheSize * 11 + 9) / 10
        let keys = (0..<syntheticRequestCount).map { $0 % length }
        return Trace(name: "loop1.1x", keys: keys, keySpace: syntheticKeySpace)
    }

    /// One-off keys, among which a third of the requests repeat the key requested 1 to 200
    /// requests earlier (uniformly): a transaction log's shape.
    static func rereferences(seed: UInt64 = 4) -> Trace {
        var random = TraceRandom(seed: seed)
        var keys: [Int] = []
        keys.reserveCapacity(syntheticRequestCount)
        var next = 0
        for _ in 0..<syntheticRequestCount {
            if keys.count > 0, random.next(below: 3) == 0 {
                let distance = 1 + random.next(below: 200)
                keys.append(keys[max(0, keys.count - distance)])
            } else {
                keys.append(next)
                next += 1
            }
        }
        return Trace(name: "rereference", keys: keys, keySpace: syntheticKeySpace)
    }

    /// Recency-heavy: a new key appears every 10 requests, and a request asks for the key born
    /// r births ago with r drawn from Zipf(`exponent`) over 100,000 ages.
    static func recency(_ exponent: Double = 1.0, seed: UInt64 = 5) -> Trace {
        var random = TraceRandom(seed: seed)
        let sampler = ZipfSampler(count: syntheticKeySpace, exponent: exponent)
        var keys: [Int] = []
        keys.reserveCapacity(syntheticRequestCount)
        for request in 0..<syntheticRequestCount {
            let born = request / 10
            keys.append(max(0, born - sampler.rank(&random)))
        }
        return Trace(name: "recency\(exponent)", keys: keys, keySpace: syntheticKeySpace)
    }
}

/// Draws ranks 0..<count with P(rank r) ∝ 1 / (r + 1)^exponent, by binary search in the
/// cumulative distribution.
struct ZipfSampler {
    private var cumulative: [Double]

    init(count: Int, exponent: Double) {
        cumulative = []
        cumulative.reserveCapacity(count)
        var total = 0.0
        for rank in 1...count {
            total += 1 / pow(Double(rank), exponent)
            cumulative.append(total)
        }
        for index in cumulative.indices {
            cumulative[index] /= total
        }
    }

    func rank(_ random: inout TraceRandom) -> Int {
        let target = random.nextUnitDouble()
        var low = 0
        var high = cumulative.count - 1
        while low < high {
            let middle = (low + high) / 2
            if cumulative[middle] < target { low = middle + 1 } else { high = middle }
        }
        return low
    }
}

/// The traces draw from their own ``SplitMix64`` (seeded apart from the other figures' one, so
/// that changing one never changes the other).
typealias TraceRandom = SplitMix64

extension SplitMix64 {
    /// A uniformly random permutation of 0..<count (Fisher–Yates).
    static func permutation(_ count: Int, using random: inout SplitMix64) -> [Int] {
        var result = Array(0..<count)
        for index in stride(from: count - 1, to: 0, by: -1) {
            result.swapAt(index, random.next(below: index + 1))
        }
        return result
    }
}

extension Trace {
    /// Reads a trace from a file of one key per line, or of comma-separated rows whose
    /// `csvColumn`-th field (counting from 1) is the key. Empty lines are skipped; a header row
    /// counts as one request. Keys are compared as text.
    static func load(path: String, csvColumn: Int?) throws(HitRateError) -> Trace {
        let data = try contents(of: path)
        let file = URL(fileURLWithPath: path).lastPathComponent
        // The formats of the real traces, by name, as `keys.py` reads them.
        let narrow = file.hasPrefix("cache2k-") || file.hasPrefix("cloudphysics-")
        if csvColumn == nil, narrow || file.contains("-int64.trace") {
            return try binaryTrace(data, width: narrow ? 4 : 8, path: path)
        }
        let skipsCheckpoints = file.hasPrefix("lirs-")
        // An address trace's lines are `<op> 0x<address> <n>`; the key is the address.
        let keyIsSecondField = csvColumn == nil && file.hasPrefix("address-")
        var identifiers: [String: Int] = [:]
        var keys: [Int] = []
        var lineNumber = 0
        var start = data.startIndex
        while start < data.endIndex {
            let end = data[start...].firstIndex(of: UInt8(ascii: "\n")) ?? data.endIndex
            lineNumber += 1
            var line = data[start..<end]
            start = end < data.endIndex ? data.index(after: end) : end
            if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
            if line.isEmpty { continue }
            // A LIRS trace marks checkpoints with `*` lines.
            if skipsCheckpoints, line.elementsEqual("*".utf8) { continue }
            let key: String
            if let csvColumn {
                let fields = csvFields(line)
                guard csvColumn <= fields.count else {
                    throw HitRateError(
                        "line \(lineNumber) of '\(path)' has \(fields.count) columns; "
                            + "--csv-column asks for column \(csvColumn)"
                    )
                }
                key = fields[csvColumn - 1]
            } else if keyIsSecondField {
                let fields = line.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: true)
                guard fields.count >= 2 else {
                    throw HitRateError("line \(lineNumber) of '\(path)' is not '<op> <address> <n>'")
                }
                key = String(decoding: fields[1], as: UTF8.self)
            } else {
                key = String(decoding: line, as: UTF8.self)
            }
            if let identifier = identifiers[key] {
                keys.append(identifier)
            } else {
                identifiers[key] = identifiers.count
                keys.append(identifiers.count - 1)
            }
        }
        guard !keys.isEmpty else {
            throw HitRateError("the trace file '\(path)' holds no keys")
        }
        let name = URL(fileURLWithPath: path).lastPathComponent
        return Trace(name: name, keys: keys, keySpace: identifiers.count)
    }

    /// The bytes of `path`, decompressed by `gzip -dc` or `xz -dc` when it ends in `.gz` or `.xz`.
    private static func contents(of path: String) throws(HitRateError) -> Data {
        let tool = path.hasSuffix(".gz") ? "gzip" : path.hasSuffix(".xz") ? "xz" : nil
        guard let tool else {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw HitRateError("cannot read the trace file '\(path)'")
            }
            return data
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [tool, "-dc", path]
        let output = Pipe()
        process.standardOutput = output
        do {
            try process.run()
        } catch {
            throw HitRateError("cannot run \(tool) to read '\(path)': \(error)")
        }
        let data: Data
        do {
            data = try output.fileHandleForReading.readToEnd() ?? Data()
        } catch {
            throw HitRateError("cannot read what \(tool) -dc '\(path)' printed: \(error)")
        }
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw HitRateError("\(tool) -dc '\(path)' failed with status \(process.terminationStatus)")
        }
        return data
    }

    /// A trace of big-endian integer keys of `width` bytes.
    private static func binaryTrace(_ data: Data, width: Int, path: String) throws(HitRateError) -> Trace {
        var identifiers: [Int64: Int] = [:]
        var keys: [Int] = []
        keys.reserveCapacity(data.count / width)
        data.withUnsafeBytes { bytes in
            var offset = 0
            while offset + width <= bytes.count {
                var key: Int64 = 0
                for index in 0..<width { key = key << 8 | Int64(bytes[offset + index]) }
                if width == 4 { key = Int64(Int32(truncatingIfNeeded: key)) }
                offset += width
                if let identifier = identifiers[key] {
                    keys.append(identifier)
                } else {
                    identifiers[key] = identifiers.count
                    keys.append(identifiers.count - 1)
                }
            }
        }
        guard !keys.isEmpty else {
            throw HitRateError("the trace file '\(path)' holds no keys")
        }
        return Trace(name: URL(fileURLWithPath: path).lastPathComponent, keys: keys, keySpace: identifiers.count)
    }

    /// Splits one CSV row into fields; a field in double quotes may hold commas and doubled quotes.
    private static func csvFields(_ line: Data) -> [String] {
        var fields: [String] = []
        var field: [UInt8] = []
        var quoted = false
        var iterator = line.makeIterator()
        var pending = iterator.next()
        while let byte = pending {
            pending = iterator.next()
            if quoted {
                if byte == UInt8(ascii: "\"") {
                    if pending == UInt8(ascii: "\"") {
                        field.append(byte)
                        pending = iterator.next()
                    } else {
                        quoted = false
                    }
                } else {
                    field.append(byte)
                }
            } else if byte == UInt8(ascii: "\"") && field.isEmpty {
                quoted = true
            } else if byte == UInt8(ascii: ",") {
                fields.append(String(decoding: field, as: UTF8.self))
                field.removeAll(keepingCapacity: true)
            } else {
                field.append(byte)
            }
        }
        fields.append(String(decoding: field, as: UTF8.self))
        return fields
    }
}
