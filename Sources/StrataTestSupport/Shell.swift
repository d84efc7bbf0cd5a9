package import Foundation
import Strata

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs commands to completion, for tests that drive a child process.
///
/// Uses `system` rather than Foundation's `Process`, whose `waitUntilExit` was seen to miss
/// scripts/postgres.sh's exit on Linux and hang. The wait blocks a thread, so it runs on the tests'
/// own threads (``TestThreads``) and the caller suspends: a test never holds a cooperative-pool
/// thread, nor one of Strata's I/O threads, while a child runs, and a bare `swift test` keeps its
/// timers on time.
package enum Shell {
    /// Runs `command` (a program and its arguments) with `input` on standard input; returns its
    /// exit status and what it printed.
    package static func run(
        _ command: [String],
        input: Data = Data()
    ) async -> (status: Int32, output: String, errors: String) {
        await TestThreads.run { runBlocking(command, input: input) }
    }

    private static func runBlocking(_ command: [String], input: Data) -> (status: Int32, output: String, errors: String)
    {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("strata-shell-\(UUID().uuidString)")
            .path
        defer {
            for suffix in [".in", ".out", ".err"] {
                try? FileManager.default.removeItem(atPath: base + suffix)
            }
        }
        _ = FileManager.default.createFile(atPath: base + ".in", contents: input)
        let line =
            command.map(quoted).joined(separator: " ")
            + " <\(quoted(base + ".in")) >\(quoted(base + ".out")) 2>\(quoted(base + ".err"))"
        let status = system("/bin/bash -c \(quoted(line))")
        let output = (try? String(contentsOfFile: base + ".out", encoding: .utf8)) ?? ""
        let errors = (try? String(contentsOfFile: base + ".err", encoding: .utf8)) ?? ""
        return (status == 0 ? 0 : (status >> 8 == 0 ? 1 : status >> 8), output, errors)
    }

    private static func quoted(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}
