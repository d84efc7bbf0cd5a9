import Foundation
import Strata
import Testing

@Suite struct CodecTests {
    // MARK: JSON

    @Test func jsonRoundTripsACodableValue() async throws {
        let bytes = MemoryStorage<String, Data>()
        let cities = bytes.json(City.self)

        try await cities.set(.kharkiv, forKey: "kharkiv")

        #expect(try await cities.value(forKey: "kharkiv") == .kharkiv)
        let stored = try #require(bytes.value(forKey: "kharkiv"))
        #expect(try JSONDecoder().decode(City.self, from: stored) == .kharkiv)
    }

    @Test func jsonUsesTheGivenEncoderAndDecoder() async throws {
        let bytes = MemoryStorage<String, Data>()
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        let cities = bytes.json(City.self, encoder: encoder, decoder: decoder)

        try await cities.set(.lviv, forKey: "lviv")

        let stored = try #require(bytes.value(forKey: "lviv"))
        #expect(String(decoding: stored, as: UTF8.self).contains("foundation_year"))
        #expect(try await cities.value(forKey: "lviv") == .lviv)
    }

    @Test(arguments: [Data("garbage".utf8), Data(), Data([0xFF, 0x00, 0x7B]), Data("{\"name\": 1}".utf8)])
    func jsonThatDoesNotDecodeThrowsDecodingFailedAndStaysStored(bytes stored: Data) async throws {
        let bytes = MemoryStorage<String, Data>()
        bytes.set(stored, forKey: "kharkiv")
        let cities = bytes.json(City.self)

        let error = await #expect(throws: StorageError.self) {
            try await cities.value(forKey: "kharkiv")
        }

        #expect(error?.code == .decodingFailed)
        #expect(error?.key == "kharkiv")
        #expect(error?.underlying is DecodingError)
        #expect(error?.undecodedBytes?.prefix == stored)
        #expect(error?.undecodedBytes?.byteCount == stored.count)
        #expect(bytes.value(forKey: "kharkiv") == stored)
    }

    @Test func jsonThatCannotBeEncodedThrowsEncodingFailedAndWritesNothing() async throws {
        let bytes = MemoryStorage<String, Data>()
        let numbers = bytes.json(Double.self)
        try await numbers.set(1.5, forKey: "ratio")

        let error = await #expect(throws: StorageError.self) {
            try await numbers.set(.nan, forKey: "ratio")
        }

        #expect(error?.code == .encodingFailed)
        #expect(error?.key == "ratio")
        #expect(error?.underlying is EncodingError)
        #expect(try await numbers.value(forKey: "ratio") == 1.5)
    }

    // MARK: Property lists

    @Test(arguments: [PropertyListSerialization.PropertyListFormat.binary, .xml])
    func propertyListRoundTripsACodableValue(format: PropertyListSerialization.PropertyListFormat) async throws {
        let bytes = MemoryStorage<String, Data>()
        let cities = bytes.propertyList(City.self, format: format)

        try await cities.set(.kyiv, forKey: "kyiv")

        #expect(try await cities.value(forKey: "kyiv") == .kyiv)
        let stored = try #require(bytes.value(forKey: "kyiv"))
        let prefix = format == .xml ? "<?xml" : "bplist"
        #expect(String(decoding: stored.prefix(prefix.utf8.count), as: UTF8.self) == prefix)
    }

    @Test func propertyListReadsEitherFormat() async throws {
        let bytes = MemoryStorage<String, Data>()
        try await bytes.propertyList(City.self, format: .xml).set(.kyiv, forKey: "kyiv")

        let city = try await bytes.propertyList(City.self, format: .binary).value(forKey: "kyiv")

        #expect(city == .kyiv)
    }

    @Test func propertyListThatDoesNotDecodeThrowsDecodingFailed() async throws {
        let bytes = MemoryStorage<String, Data>()
        bytes.set(Data("not a plist".utf8), forKey: "kyiv")

        let error = await #expect(throws: StorageError.self) {
            try await bytes.propertyList(City.self).value(forKey: "kyiv")
        }

        #expect(error?.code == .decodingFailed)
        #expect(error?.undecodedBytes?.prefix == Data("not a plist".utf8))
        #expect(bytes.value(forKey: "kyiv") == Data("not a plist".utf8))
    }

    // MARK: Strings

    @Test func stringRoundTripsAsUTF8() async throws {
        let bytes = MemoryStorage<String, Data>()
        let strings = bytes.string()

        try await strings.set("Харків", forKey: "city")

        #expect(bytes.value(forKey: "city") == Data("Харків".utf8))
        #expect(try await strings.value(forKey: "city") == "Харків")
    }

    @Test func invalidUTF8ThrowsDecodingFailedAndStaysStored() async throws {
        let bytes = MemoryStorage<String, Data>()
        let invalid = Data([0x48, 0x69, 0xC3, 0x28, 0xFF])
        bytes.set(invalid, forKey: "greeting")

        let error = await #expect(throws: StorageError.self) {
            try await bytes.string().value(forKey: "greeting")
        }

        #expect(error?.code == .decodingFailed)
        #expect(error?.underlying is CodecError)
        #expect(error?.undecodedBytes?.prefix == invalid)
        #expect(error?.description.hasSuffix("[5 bytes: 0x4869c328ff]") == true, "\(String(describing: error))")
        #expect(bytes.value(forKey: "greeting") == invalid)
    }

    @Test func stringOutsideTheEncodingThrowsEncodingFailedAndWritesNothing() async throws {
        let bytes = MemoryStorage<String, Data>()
        let ascii = bytes.string(encoding: .ascii)

        let error = await #expect(throws: StorageError.self) {
            try await ascii.set("Харків", forKey: "city")
        }

        #expect(error?.code == .encodingFailed)
        #expect(error?.underlying is CodecError)
        #expect(bytes.count == 0)
    }

    // MARK: JSON values

    @Test func jsonDictionaryRoundTripsNestedValues() async throws {
        let bytes = MemoryStorage<String, Data>()
        let settings = bytes.jsonDictionary()
        let stored: [String: JSONValue] = [
            "theme": "dark",
            "fontSize": 14,
            "scale": 1.5,
            "beta": true,
            "proxy": nil,
            "recent": ["a.txt", "b.txt"],
            "window": ["width": 800, "height": 600],
        ]

        try await settings.set(stored, forKey: "settings")

        #expect(try await settings.value(forKey: "settings") == stored)
    }

    @Test(arguments: [
        JSONValue.null, true, false, 0, -12, 3.25, "", "text", [], [1, "two", nil], [:], ["nested": ["deep": [true]]],
    ])
    func jsonValueRoundTripsEveryKind(value: JSONValue) async throws {
        let documents = MemoryStorage<String, Data>().jsonValue()

        try await documents.set(value, forKey: "document")

        #expect(try await documents.value(forKey: "document") == value)
    }

    @Test func jsonValueDecodesBooleansAsBooleansAndNumbersAsNumbers() async throws {
        let bytes = MemoryStorage<String, Data>()
        bytes.set(Data(#"[true, 1, 0, "1", null]"#.utf8), forKey: "document")

        let value = try await bytes.jsonValue().value(forKey: "document")

        #expect(value == [.bool(true), .number(1), .number(0), .string("1"), .null])
    }

    @Test func jsonDictionaryOfANonObjectThrowsDecodingFailed() async throws {
        let bytes = MemoryStorage<String, Data>()
        bytes.set(Data("[1, 2]".utf8), forKey: "settings")

        let error = await #expect(throws: StorageError.self) {
            try await bytes.jsonDictionary().value(forKey: "settings")
        }

        #expect(error?.code == .decodingFailed)
    }

    // MARK: Codec protocol

    @Test func readOnlyStorageDecodesThroughACodec() async throws {
        let bytes = MemoryStorage<String, Data>()
        bytes.set(Data("hello".utf8), forKey: "greeting")

        let strings = bytes.readOnly().coded(with: StringCodec())

        #expect(try await strings.value(forKey: "greeting") == "hello")
    }
}
