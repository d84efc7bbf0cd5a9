package import Foundation

/// A PostgreSQL server of a test's own, started and stopped with scripts/postgres.sh, for tests
/// that stop the server and so cannot share one.
package struct PrivateServer: Sendable {
    package struct Failed: Error, CustomStringConvertible {
        package var description: String
    }

    package let folder: String
    package let url: String

    /// Runs `body` with a new server, which is removed afterwards whatever `body` does.
    package static func with<Result>(_ body: (PrivateServer) async throws -> Result) async throws -> Result {
        let server = try await start()
        do {
            let result = try await body(server)
            await server.remove()
            return result
        } catch {
            await server.remove()
            throw error
        }
    }

    /// Starts a new server in a fresh folder.
    package static func start() async throws -> PrivateServer {
        let folder = FileManager.default.temporaryDirectory
            .appendingPathComponent("strata-postgres.\(UUID().uuidString.prefix(8))").path
        let output = try await script(["start", folder])
        guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix("export STRATA_POSTGRES_URL=") })
        else {
            throw Failed(description: "scripts/postgres.sh start printed no URL: \(output)")
        }
        let url = String(line.dropFirst("export STRATA_POSTGRES_URL=".count))
        return PrivateServer(folder: folder, url: url)
    }

    /// Stops the server at once, as a crash would, keeping its data.
    package func kill() async throws {
        _ = try await Self.script(["kill", folder])
    }

    /// Starts the stopped server again, on the same port.
    package func restart() async throws {
        _ = try await Self.script(["start", folder])
    }

    /// Stops the server and deletes its folder.
    package func remove() async {
        _ = try? await Self.script(["stop", folder])
    }

    /// Runs scripts/postgres.sh with `arguments`; returns its standard output.
    private static func script(_ arguments: [String]) async throws -> String {
        let script = repositoryRoot().appendingPathComponent("scripts/postgres.sh").path
        let result = await Shell.run(["/bin/bash", script] + arguments)
        guard result.status == 0 else {
            throw Failed(
                description: "scripts/postgres.sh \(arguments.joined(separator: " ")) failed: \(result.errors)"
            )
        }
        return result.output
    }
}

/// The repository's root folder, found from this file's path.
package func repositoryRoot(filePath: String = #filePath) -> URL {
    var folder = URL(fileURLWithPath: filePath).deletingLastPathComponent()
    while folder.path != "/" {
        if FileManager.default.fileExists(atPath: folder.appendingPathComponent("Package.swift").path) {
            return folder
        }
        folder.deleteLastPathComponent()
    }
    return URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
}
