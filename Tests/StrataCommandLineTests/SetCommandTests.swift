import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// `strata set` reports what it cannot read in words a person can act on, and stores nothing.
@Suite(.onTestThreads) struct SetCommandTests {
    private static func strata(_ arguments: [String]) async throws -> (status: Int32, output: String, errors: String) {
        let executable = try #require(StrataExecutable.url(), "the strata executable is not built next to the tests")
        return await Shell.run([executable.path] + arguments)
    }

    /// Runs `strata set --folder <folder> key` with standard input redirected by `redirection`.
    private static func set(
        in folder: TemporaryFolder,
        stdin redirection: String
    ) async throws -> (
        status: Int32, output: String, errors: String
    ) {
        let executable = try #require(StrataExecutable.url(), "the strata executable is not built next to the tests")
        return await Shell.run([
            "/bin/bash", "-c", "exec \"$0\" set --folder \"$1\" key \(redirection)", executable.path, folder.path,
        ])
    }

    @Test func standardInputThatIsADirectoryIsReportedNotATrap() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }

        let result = try await Self.set(in: folder, stdin: "< /")

        #expect(result.status == 1, "\(result.errors)")
        #expect(result.errors.contains("cannot read standard input: Is a directory"), "\(result.errors)")
        #expect(!result.errors.contains("try!"))
        #expect(try DiskStorage(url: folder.url).count == 0)
    }

    @Test func closedStandardInputIsReportedNotATrap() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }

        let result = try await Self.set(in: folder, stdin: "<&-")

        #expect(result.status == 1, "\(result.errors)")
        #expect(result.errors.contains("cannot read standard input"), "\(result.errors)")
    }

    @Test func aMissingFileIsNamedWithoutAnErrorDomain() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let missing = folder.path + "/no-such-file"

        let result = try await Self.strata(["set", "--folder", folder.path, "key", "--file", missing])

        #expect(result.status == 1)
        #expect(result.errors.contains("cannot read '\(missing)': no such file"), "\(result.errors)")
        #expect(!result.errors.contains("NSCocoaErrorDomain"))
    }

    @Test(arguments: [["--time-to-live=-5"], ["--time-to-live=0"], ["--time-to-live", "-5"]])
    func aTimeToLiveThatIsNotPositiveIsRefusedBeforeAnythingIsStored(option: [String]) async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }

        let result = try await Self.strata(["set", "--folder", folder.path, "key", "--file", "/dev/null"] + option)

        #expect(result.status != 0)
        #expect(result.errors.contains("--time-to-live takes a positive number of seconds"), "\(result.errors)")
        #expect(!FileManager.default.fileExists(atPath: folder.path + "/" + DiskStorage.manifestName))
    }

    @Test func versionIsPrinted() async throws {
        let result = try await Self.strata(["--version"])

        #expect(result.status == 0, "\(result.errors)")
        #expect(result.output.trimmingCharacters(in: .whitespacesAndNewlines) == "0.1.0")
    }
}

/// The commands that only read (or remove from) a folder never create one where a mistyped path
/// points, nor adopt a folder that is not a Strata disk folder.
@Suite(.onTestThreads) struct ReadingCommandTests {
    static let commands: [[String]] = [
        ["ls"], ["get", "key"], ["rm", "key"], ["stats"], ["verify"], ["trim", "--bytes", "0"],
    ]

    @Test(arguments: commands)
    func aMistypedFolderIsRefusedAndNotCreated(command: [String]) async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let typo = folder.path + "/cahce"
        let executable = try #require(StrataExecutable.url())

        let result = await Shell.run([executable.path, command[0], "--folder", typo] + command.dropFirst())

        #expect(result.status == 1, "\(result.output)\(result.errors)")
        #expect(result.errors.contains("no folder at \(typo)"), "\(result.errors)")
        #expect(!FileManager.default.fileExists(atPath: typo))
    }

    @Test(arguments: commands)
    func aFolderThatIsNotAStrataFolderIsRefusedAndLeftAsItWas(command: [String]) async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let executable = try #require(StrataExecutable.url())

        let result = await Shell.run([executable.path, command[0], "--folder", folder.path] + command.dropFirst())

        #expect(result.status == 1, "\(result.output)\(result.errors)")
        #expect(result.errors.contains("is not a Strata disk folder"), "\(result.errors)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty)
    }
}

@Suite(.onTestThreads) struct RemoveCommandTests {
    @Test func removingAKeyThatIsNotThereSaysSoAndFailsWhileTheOthersGo() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let storage = try DiskStorage(url: folder.url)
        try await storage.set(Data("v".utf8), forKey: "present")
        let executable = try #require(StrataExecutable.url())

        let result = await Shell.run([executable.path, "rm", "--folder", folder.path, "present", "absent"])

        #expect(result.status == 1)
        #expect(result.errors.contains("no value for 'absent'"), "\(result.errors)")
        #expect(!result.errors.contains("'present'"))
        #expect(try await DiskStorage(url: folder.url).value(forKey: "present") == nil)
    }
}

@Suite(.onTestThreads) struct ListCommandTests {
    @Test func sizesAreTheValuesAndTheTotalSaysWhatTheHeadersAdd() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let storage = try DiskStorage(url: folder.url)
        try await storage.set(Data("hello".utf8), forKey: "greeting")
        try await storage.set(Data(repeating: 7, count: 2048), forKey: "blob")
        let executable = try #require(StrataExecutable.url())

        let result = await Shell.run([executable.path, "ls", "--folder", folder.path])
        let lines = result.output.split(separator: "\n").map(String.init)

        #expect(result.status == 0, "\(result.errors)")
        #expect(lines.contains { $0.hasPrefix("5 B ") && $0.hasSuffix("greeting") }, "\(lines)")
        #expect(lines.contains { $0.hasPrefix("2.0 KiB ") && $0.hasSuffix("blob") }, "\(lines)")
        let headers = 2 * 56 + "greeting".utf8.count + "blob".utf8.count
        #expect(
            lines.last == "2 values, 2.0 KiB of values, \(formatted(2053 + headers)) on disk with headers",
            "\(lines)"
        )
    }

    private func formatted(_ bytes: Int) -> String {
        String(format: "%.1f KiB", Double(bytes) / 1024)
    }
}
