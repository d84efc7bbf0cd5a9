import Foundation
import Strata
import Testing

/// A value that does not decode comes back in its error: the first 4 KiB and the length, through
/// codecs, chains of storages, providers and caches, so a bad payload can be read from the error
/// without reading the store again.
@Suite struct UndecodedBytesTests {
    struct Reading: Codable, Equatable {
        var celsius: Double
    }

    @Test func aLongValueKeepsItsFirst4KiBAndItsLength() async throws {
        let bytes = MemoryStorage<String, Data>()
        let stored = Data("{\"celsius\": \"warm\"".utf8) + Data(repeating: 0x20, count: 10_000)
        bytes.set(stored, forKey: "kyiv")

        let error = await #expect(throws: StorageError.self) {
            try await bytes.json(Reading.self).value(forKey: "kyiv")
        }

        let undecoded = try #require(error?.undecodedBytes)
        #expect(undecoded.prefix == stored.prefix(StorageError.UndecodedBytes.maximumKeptByteCount))
        #expect(undecoded.byteCount == 10_018)
        #expect(!undecoded.isComplete)
        #expect(
            error?.description.contains(#"[10018 bytes: "{\"celsius\": \"warm\""#) == true,
            "\(String(describing: error))"
        )
    }

    @Test func aChainOfStoragesCarriesTheBytesOfTheLayerThatHeldThem() async throws {
        let front = MemoryStorage<String, Data>()
        let back = MemoryStorage<String, Data>()
        back.set(Data("[1, 2]".utf8), forKey: "lviv")
        let readings = front.combined(with: back).json(Reading.self).mapKeys { (city: String) in city.lowercased() }

        let error = await #expect(throws: StorageError.self) {
            try await readings.value(forKey: "LVIV")
        }

        #expect(error?.code == .decodingFailed)
        #expect(error?.undecodedBytes == StorageError.UndecodedBytes(Data("[1, 2]".utf8)))
        #expect(error?.undecodedBytes?.isComplete == true)
    }

    @Test func aProvidersValueThatDoesNotConvertCarriesItsBytes() async throws {
        let payload = Data([0xFF, 0xFE, 0x00])
        let readings = AnyProvider { (_: String) in payload }
            .mapValues { data, _ in try JSONDecoder().decode(Reading.self, from: data) }

        let error = await #expect(throws: StorageError.self) {
            try await readings.value(for: "odesa")
        }

        #expect(error?.code == .decodingFailed)
        #expect(error?.undecodedBytes?.prefix == payload)
        #expect(error?.description.hasSuffix("[3 bytes: 0xfffe00]") == true, "\(String(describing: error))")
    }

    @Test func textThatDoesNotConvertCarriesItsUTF8Bytes() async throws {
        let strings = MemoryStorage<String, String>()
        strings.set("forty-two", forKey: "answer")
        let numbers = strings.mapValues(
            reading: { (text: String) throws -> Int in
                guard let number = Int(text) else { throw CocoaError(.formatting) }
                return number
            },
            writing: { String($0) }
        )

        let error = await #expect(throws: StorageError.self) {
            try await numbers.value(forKey: "answer")
        }

        #expect(error?.undecodedBytes?.prefix == Data("forty-two".utf8))
        #expect(error?.undecodedBytes?.byteCount == 9)
    }

    @Test func aValueThatIsNotBytesCarriesNone() async throws {
        let numbers = MemoryStorage<String, Int>()
        numbers.set(-1, forKey: "count")
        let counts = numbers.mapValues(
            reading: { (number: Int) throws -> UInt in
                guard number >= 0 else { throw CocoaError(.formatting) }
                return UInt(number)
            },
            writing: { Int($0) }
        )

        let error = await #expect(throws: StorageError.self) {
            try await counts.value(forKey: "count")
        }

        #expect(error?.code == .decodingFailed)
        #expect(error?.undecodedBytes == nil)
    }
}
