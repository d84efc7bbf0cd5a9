import Foundation
import Testing

@testable import Strata

/// `strata stats` prints a disk folder's figures under the names its metrics have.
@Suite struct StatsCommandTests {
    @Test func statsPrintsEveryFigureUnderItsMetricName() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let storage = try DiskStorage(url: folder.url)
        try storage.set(Data(count: 10), forKey: "a")
        try storage.set(Data(count: 20), forKey: "b")
        let executable = try #require(StrataExecutable.url())

        let process = Process()
        process.executableURL = executable
        process.arguments = ["stats", "--folder", folder.path]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)

        #expect(process.terminationStatus == 0)
        for (name, _) in StorageStatistics().figures {
            #expect(text.contains("  \(name) "), "missing \(name)")
        }
        let entries = text.split(separator: "\n").first { $0.hasPrefix("  entries ") }
        #expect(entries?.hasSuffix(" 2") == true)
        let bytes = text.split(separator: "\n").first { $0.hasPrefix("  bytes ") }
        #expect(bytes?.hasSuffix(" \(storage.totalSize)") == true)
    }
}
