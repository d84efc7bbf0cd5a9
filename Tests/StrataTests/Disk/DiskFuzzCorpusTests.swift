import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// Replays the corpus the `StrataFuzz` target found (`Tests/StrataTests/Fuzz/Corpus`) through the
/// parsers of the disk format, so inputs that once reached new code keep being checked on every
/// test run, without the fuzzer.
@Suite(.onTestThreads) struct DiskFuzzCorpusTests {
    private static func corpus(filePath: String = #filePath) -> [URL] {
        let folder = URL(fileURLWithPath: filePath)
            .deletingLastPathComponent()
            .deletingLastPathComponent()
            .appendingPathComponent("Fuzz/Corpus", isDirectory: true)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.sorted().map { folder.appendingPathComponent($0) }
    }

    @Test func corpusIsThere() {
        #expect(Self.corpus().count >= 10)
    }

    @Test func everyCorpusInputDecodesOrThrowsItsOwnError() throws {
        var records = 0
        var manifests = 0

        for url in Self.corpus() {
            let data = try Data(contentsOf: url)
            data.withUnsafeBytes { bytes in
                // Typed throws: each parser can only throw its own error type.
                if let size = try? DiskRecordHeader.requiredSize(forPrefix: bytes) {
                    #expect(size >= DiskRecordHeader.fixedSize, "\(url.lastPathComponent)")
                }
                if let (header, payload) = try? DiskRecordHeader.decodeRecord(bytes) {
                    records += 1
                    #expect(payload == header.size..<bytes.count, "\(url.lastPathComponent)")
                    #expect(payload.count == header.payloadLength, "\(url.lastPathComponent)")
                    #expect((try? DiskRecordHeader.decode(bytes)) == header)
                }
            }
            if (try? DiskManifest.decode(data)) != nil {
                manifests += 1
            }
        }

        print("DiskFuzzCorpusTests: \(Self.corpus().count) inputs, \(records) whole records, \(manifests) manifests")
    }

}
