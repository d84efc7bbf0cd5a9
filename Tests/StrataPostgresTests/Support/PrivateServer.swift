import Foundation

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
    private static func script(_ arguments: [String]) throws -> String {
        let script = repositoryRoot().appendingPathComponent("scripts/postgres.sh").path
        let result = Shell.run(["/bin/bash", script] + arguments)
        guard result.status == 0 else {
            throw Failed(
                description: "scripts/postgres.sh \(arguments.joined(separator: " ")) failed: \(result.errors)"
            )
        }
        return result.output
    }
}
