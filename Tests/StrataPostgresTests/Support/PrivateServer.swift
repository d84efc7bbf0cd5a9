import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A PostgreSQL server of a test's own, started and stopped with scripts/postgres.sh, for tests
/// that stop the server and so cannot share one.
struct PrivateServer {
    struct Failed: Error, CustomStringConvertible {
        var description: String
    }

    let folder: String
    let url: String

    /// Starts a new server in a fresh folder.
    static func start() throws -> PrivateServer {
        let folder = FileManager.default.temporaryDirectory
            .appendingPathComponent("strata-postgres.\(UUID().uuidString.prefix(8))").path
        let output = try script(["start", folder])
        guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix("export STRATA_POSTGRES_URL=") })
        else {
            throw Failed(description: "scripts/postgres.sh start printed no URL: \(output)")
        }
        let url = String(line.dropFirst("export STRATA_POSTGRES_URL=".count))
        return PrivateServer(folder: folder, url: url)
    }

    /// Stops the server at once, as a crash would, keeping its data.
    func kill() throws {
        _ = try Self.script(["kill", folder])
    }

    /// Starts the stopped server again, on the same port.
    func restart() throws {
        _ = try Self.script(["start", folder])
    }

    /// Stops the server and deletes its folder.
    func remove() {
        _ = try? Self.script(["stop", folder])
    }

    /// Runs scripts/postgres.sh with `arguments`; returns its standard output.
    ///
    /// Uses `system` rather than Foundation's `Process`, whose `waitUntilExit` was seen to miss
    /// this script's exit on Linux and hang.
    private static func script(_ arguments: [String]) throws -> String {
        let logs = FileManager.default.temporaryDirectory.appendingPathComponent("strata-script-\(UUID().uuidString)")
        defer {
            try? FileManager.default.removeItem(atPath: logs.path + ".out")
            try? FileManager.default.removeItem(atPath: logs.path + ".err")
        }
        let command =
            ([repositoryRoot().appendingPathComponent("scripts/postgres.sh").path] + arguments).map(quoted)
            .joined(separator: " ") + " >\(quoted(logs.path + ".out")) 2>\(quoted(logs.path + ".err")) </dev/null"
        let status = system("/bin/bash -c \(quoted(command))")
        let output = (try? String(contentsOfFile: logs.path + ".out", encoding: .utf8)) ?? ""
        let messages = (try? String(contentsOfFile: logs.path + ".err", encoding: .utf8)) ?? ""
        guard status == 0 else {
            throw Failed(description: "scripts/postgres.sh \(arguments.joined(separator: " ")) failed: \(messages)")
        }
        return output
    }

    private static func quoted(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}
