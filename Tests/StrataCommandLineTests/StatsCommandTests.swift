import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// `strata stats` prints a disk folder's figures under the names its metrics have.
@Suite(.onTestThreads) struct StatsCommandTests {
    @Test func statsPrintsEveryFigureUnderItsMetricName() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let storage = try DiskStorage(url: folder.url)
        try await storage.set(Data(count: 10), forKey: "a")
        try await storage.set(Data(count: 20), forKey: "b")
        let executable = try #require(StrataExecutable.url())

        let result = await Shell.run([executable.path, "stats", "--folder", folder.path])
        let text = result.output

        #expect(result.status == 0)
        for (name, _) in StorageStatistics().figures {
            #expect(text.contains("  \(name) "), "missing \(name)")
        }
        let entries = text.split(separator: "\n").first { $0.hasPrefix("  entries ") }
        #expect(entries?.hasSuffix(" 2") == true)
        let bytes = text.split(separator: "\n").first { $0.hasPrefix("  bytes ") }
        #expect(bytes?.hasSuffix(" \(storage.totalSize)") == true)
        // The size says what it includes, and the counters say whose they are.
        let headers = 2 * 56 + 2
        #expect(
            text.contains(
                "size:          \(30 + headers) B on disk, headers included (\(30 + headers) bytes; 30 B of values)"
            ),
            "\(text)"
        )
        #expect(text.contains("as each process counts its own"), "\(text)")
    }
}
