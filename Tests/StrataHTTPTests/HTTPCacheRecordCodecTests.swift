import Foundation
import LocalHTTPServer
import Strata
import StrataHTTP
import StrataTestSupport
import Testing
import _StrataInternals

@Suite(.onTestThreads) struct HTTPCacheRecordCodecTests {
    static let full = HTTPCacheRecord(
        body: Data((0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }),
        entityTag: "\"abc\"",
        lastModified: "Tue, 15 Nov 1994 12:45:26 GMT",
        cacheControl: "max-age=60, stale-if-error=600",
        expires: "",
        received: Date(timeIntervalSince1970: 1_700_000_000.25),
        freshUntil: Date(timeIntervalSince1970: 1_700_000_060.5),
        vary: ["accept-language", "accept-encoding"],
        selectingHeaders: ["accept-language": "fr, en;q=0.5", "accept-encoding": "gzip", "é": "ünïcode"],
        listsVariants: false
    )

    @Test(
        arguments: [
            full,
            HTTPCacheRecord(body: Data(), received: Date(timeIntervalSince1970: 0)),
            HTTPCacheRecord(body: Data("x".utf8), received: Date(timeIntervalSince1970: -5)),
            HTTPCacheRecord.init(body: Data(), received: Date(), vary: ["accept"], listsVariants: true),
        ]
    )
    func everyRecordComesBackAsItWasWritten(record: HTTPCacheRecord) throws {
        let codec = HTTPCacheRecordCodec()
        let encoded = try codec.encode(record)
        #expect(try codec.decode(encoded) == record)
        // The same bytes inside a larger buffer decode the same, their body starting at index 0.
        let embedded = (Data([1, 2, 3]) + encoded)[3...]
        let decoded = try codec.decode(embedded)
        #expect(decoded == record)
        #expect(decoded.body.startIndex == 0)
    }

    @Test func aRecordIsItsBodyAndASmallHead() throws {
        let encoded = try HTTPCacheRecordCodec().encode(Self.full)
        let json = try JSONEncoder().encode(Self.full)
        #expect(encoded.count - Self.full.body.count < 200)
        #expect(json.count > Self.full.body.count * 4 / 3)
        #expect(encoded.prefix(Self.full.body.count) == Self.full.body)
    }

    @Test func aJSONRecordOrAnotherVersionIsAnotherFormat() throws {
        let codec = HTTPCacheRecordCodec()
        let json = try JSONEncoder().encode(Self.full)
        #expect(throws: HTTPCacheRecordFormatError.self) { try codec.decode(json) }
        #expect((try? codec.decode(json)) == nil)
        var later = try codec.encode(Self.full)
        later[later.count - 5] = HTTPCacheRecordCodec.formatVersion + 1
        for other in [json, later] {
            do {
                _ = try codec.decode(other)
                Issue.record("decoded a record in another format")
            } catch let error as HTTPCacheRecordFormatError {
                #expect(error.isOtherFormat)
            }
        }
    }

    @Test func damagedBytesAreAnErrorNeverACrash() throws {
        let codec = HTTPCacheRecordCodec()
        let small = HTTPCacheRecord(
            body: Data("body".utf8),
            entityTag: "\"e\"",
            received: Date(timeIntervalSince1970: 1),
            vary: ["a"],
            selectingHeaders: ["a": "b"]
        )
        let encoded = try codec.encode(small)
        // Every truncation of the record.
        for length in 0..<encoded.count {
            let result = Result { try codec.decode(encoded.prefix(length)) }
            if case .failure(let error) = result {
                #expect((error as? HTTPCacheRecordFormatError)?.isOtherFormat == false)
            }
        }
        // Random damage to the head and the trailer's length.
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<5000 {
            var damaged = encoded
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                damaged[Int.random(in: 4..<(damaged.count - 5), using: &generator)] = UInt8.random(
                    in: 0...255,
                    using: &generator
                )
            }
            _ = try? codec.decode(damaged)
        }
        var longHead = encoded
        longHead[longHead.count - 9] = 0xFF
        longHead[longHead.count - 8] = 0xFF
        #expect(throws: HTTPCacheRecordFormatError(isOtherFormat: false, reason: "the head is longer than the record"))
        {
            try codec.decode(longHead)
        }
    }

    @Test func anOldJSONRecordOnDiskIsAMissNotAnErrorAndIsReplaced() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("strata-http-\(UUID().uuidString)")
        defer { FolderRemoval.remove(folder) }
        let resource = Resource(entityTag: "\"v1\"", headers: [("Cache-Control", "max-age=600")])
        let reports = LockedState<[StorageError]>([])

        let (body, hits, stored) = try await HTTPFixture.run(routes: ["/a": resource.route]) { http in
            let url = http.url("/a")
            let old = try DiskStorage(url: folder).json(HTTPCacheRecord.self)
            try await old.set(
                HTTPCacheRecord(body: Data("old".utf8), received: Date(), freshUntil: .distantFuture),
                forKey: url.absoluteString
            )
            let records = try DiskStorage(url: folder).httpCacheRecords()
            let provider = http.source().cache(in: records) { error in reports.withLock { $0.append(error) } }
            let body = try await provider.value(for: url)
            _ = try await provider.value(for: url)
            return (body, http.server.hits("/a"), try await records.value(forKey: url.absoluteString))
        }

        #expect(body == Data("version 1".utf8))
        #expect(hits == 1)
        #expect(reports.withLock { $0 }.isEmpty)
        #expect(stored?.body == Data("version 1".utf8))
    }

    @Test func aDamagedRecordIsReportedAndFetchedAgain() async throws {
        let resource = Resource(entityTag: "\"v1\"")
        let bytes = MemoryStorage<String, Data>()
        let reports = LockedState<[StorageError]>([])

        let body = try await HTTPFixture.run(routes: ["/a": resource.route]) { http in
            var damaged = try HTTPCacheRecordCodec().encode(
                HTTPCacheRecord(body: Data("x".utf8), entityTag: "\"v1\"", received: Date())
            )
            damaged[damaged.count - 9] = 0x7F
            bytes.set(damaged, forKey: http.url("/a").absoluteString)
            let provider = http.source().cache(in: bytes.httpCacheRecords()) { error in
                reports.withLock { $0.append(error) }
            }
            return try await provider.value(for: http.url("/a"))
        }

        #expect(body == Data("version 1".utf8))
        #expect(reports.withLock { $0.map(\.code) } == [.decodingFailed])
        #expect(reports.withLock { $0.first?.underlying } is HTTPCacheRecordFormatError)
        #expect(resource.log.values(of: "If-None-Match") == [nil])
    }
}
