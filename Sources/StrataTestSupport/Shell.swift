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
/// The child is a ``ChildProcess``: it inherits no descriptor of the test process but the three
/// it is given (here, files), and its exit is awaited by a thread of its own, so the caller suspends
/// and no cooperative-pool thread, nor one of Strata's I/O threads, waits on it.
package enum Shell {
    /// Runs `command` (a program's path and its arguments) with `input` on standard input;
    /// returns its exit status (128 plus the signal, if one killed it) and what it printed.
    package static func run(
        _ command: [String],
        input: Data = Data()
    ) async -> (status: Int32, output: String, errors: String) {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("strata-shell-\(UUID().uuidString)")
            .path
        // The files are written and read on the tests' threads, never the cooperative pool.
        guard await TestThreads.run({ FileManager.default.createFile(atPath: base + ".in", contents: input) }) else {
            return (127, "", "cannot write \(base).in")
        }
        var status: Int32 = 127
        var failure = ""
        do {
            let child = try ChildProcess(
                command,
                standardInput: .file(base + ".in"),
                standardOutput: .file(base + ".out"),
                standardError: .file(base + ".err")
            )
            status = await child.waitForExit().status
        } catch {
            failure = error.description
        }
        let (output, errors) = await TestThreads.run {
            defer {
                for suffix in [".in", ".out", ".err"] {
                    try? FileManager.default.removeItem(atPath: base + suffix)
                }
            }
            return (
                (try? String(contentsOfFile: base + ".out", encoding: .utf8)) ?? "",
                (try? String(contentsOfFile: base + ".err", encoding: .utf8)) ?? ""
            )
        }
        return (status, output, errors + failure)
    }
}
