import Foundation
import StrataTestSupport
import Testing
import _StrataInternals

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The values `strata debug-writer` writes, rebuilt here independently of the writer's code: a
/// first line `key counter`, then 16 to 4,111 bytes derived from the key and the counter.
enum WrittenValue {
    static func expected(key: String, counter: Int) -> Data {
        var data = Data("\(key) \(counter)\n".utf8)
        let length = 16 + Int(UInt64(truncatingIfNeeded: counter) &* 2_654_435_761 % 4096)
        var state = key.utf8.reduce(0xcbf2_9ce4_8422_2325 as UInt64) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
        state ^= UInt64(truncatingIfNeeded: counter)
        var generator = SeededRandomNumberGenerator(seed: state)
        var filler = [UInt8]()
        while filler.count < length {
            withUnsafeBytes(of: generator.next().littleEndian) { filler.append(contentsOf: $0) }
        }
        data.append(contentsOf: filler.prefix(length))
        return data
    }

    /// The counter `value` was written with, when it is the whole value the writer wrote for
    /// `key`; `nil` for anything else.
    static func counter(of value: Data, key: String) -> Int? {
        guard let newline = value.firstIndex(of: UInt8(ascii: "\n")) else { return nil }
        let fields = String(decoding: value[..<newline], as: UTF8.self).split(separator: " ")
        guard fields.count == 2, fields[0] == key, let counter = Int(fields[1]) else { return nil }
        return expected(key: key, counter: counter) == value ? counter : nil
    }
}

/// A running `strata debug-writer`. Any task may use it.
final class WriterProcess: Sendable {
    private let child: ChildProcess

    /// Whether the writer has not exited yet.
    var isRunning: Bool { child.isRunning }

    /// Starts `strata debug-writer` with `arguments` and returns once it has opened the folder.
    init(_ executable: URL, arguments: [String]) async throws {
        child = try ChildProcess([executable.path, "debug-writer"] + arguments, standardOutput: .pipe)
        // "ready", or the end of the output if the writer failed.
        var lines = child.lines.makeAsyncIterator()
        let line = await lines.next() ?? ""
        guard line.hasPrefix("ready") else {
            throw WriterFailure(description: "strata debug-writer did not start: '\(line)'")
        }
    }

    /// Kills the writer with `SIGKILL`, wherever it is.
    func crash() {
        child.signal(SIGKILL)
    }

    /// Waits for the writer to exit and returns how it ended.
    func waitForExit() async -> ChildProcess.Termination {
        await child.waitForExit()
    }
}

struct WriterFailure: Error, CustomStringConvertible {
    var description: String
}
