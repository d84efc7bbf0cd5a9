import Foundation
import Strata
import StrataTesting
import Testing

/// Every example of Shallows' README, done with Strata: what a Shallows user reaches for first.
@Suite struct ShallowsReadmeTests {
    /// A file name: not empty and without a slash, like the keys of Shallows' disk storage.
    private struct Filename: Hashable, Sendable, LosslessStringConvertible {
        var description: String

        init?(_ description: String) {
            guard !description.isEmpty, !description.contains("/") else { return nil }
            self.description = description
        }
    }

    /// A stand-in for `UIImage`: pixels behind a PNG signature.
    private struct Image: Hashable, Sendable {
        struct NotAnImage: Error {}
        static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47]

        var pixels: [UInt8]

        init(pixels: [UInt8]) {
            self.pixels = pixels
        }

        init(png data: Data) throws {
            guard data.starts(with: Self.signature) else { throw NotAnImage() }
            pixels = Array(data.dropFirst(Self.signature.count))
        }

        func pngData() -> Data {
            Data(Self.signature + pixels)
        }

        static let kitten = Image(pixels: [1, 2, 3])
        static let puppy = Image(pixels: [4, 5, 6])
    }

    private enum ImageKeys: String, Sendable {
        case kitten, puppy, fish
    }

    /// A disk folder of images, as Shallows' README builds it.
    private static func imageStorage(
        on files: MemoryStorage<Filename, Data>
    ) -> MappedValuesStorage<MemoryStorage<Filename, Data>, Image> {
        files.mapValues(reading: { try Image(png: $0) }, writing: { $0.pngData() })
    }

    // MARK: Usage

    @Test func citiesAreStoredAsJSON() async throws {
        let diskStorage = MemoryStorage<String, Data>().json(City.self)
        let kharkiv = City(name: "Kharkiv", foundationYear: 1654)

        try await diskStorage.set(kharkiv, forKey: "kharkiv")

        let city = try await diskStorage.value(forKey: "kharkiv")
        #expect(city == kharkiv)
    }

    // MARK: Transforms

    @Test func valuesAreMappedBothWays() async throws {
        let files = MemoryStorage<Filename, Data>()
        let images = Self.imageStorage(on: files)
        let name = try #require(Filename("kitten.png"))

        try await images.set(.kitten, forKey: name)

        #expect(files.value(forKey: name) == Data([0x89, 0x50, 0x4E, 0x47, 1, 2, 3]))
        #expect(try await images.value(forKey: name) == .kitten)
    }

    @Test func valueThatIsNotAnImageThrowsDecodingFailed() async throws {
        let files = MemoryStorage<Filename, Data>()
        let name = try #require(Filename("notes.txt"))
        files.set(Data("plain text".utf8), forKey: name)

        let error = await #expect(throws: StorageError.self) {
            try await Self.imageStorage(on: files).value(forKey: name)
        }

        #expect(error?.code == .decodingFailed)
        #expect(error?.underlying is Image.NotAnImage)
    }

    @Test func keysAreMappedToStringsAndThenToAnEnum() async throws {
        let files = MemoryStorage<Filename, Data>()
        let images = Self.imageStorage(on: files)

        let keyedImages = images.usingStringKeys().mapKeys(to: ImageKeys.self)
        try await keyedImages.set(.kitten, forKey: .kitten)

        #expect(try await keyedImages.value(forKey: .kitten) == .kitten)
        #expect(try await keyedImages.value(forKey: .puppy) == nil)
        #expect(files.keys().map(\.description) == ["kitten"])
    }

    @Test func stringThatIsNotAFilenameThrowsInvalidKey() async throws {
        let images = Self.imageStorage(on: MemoryStorage<Filename, Data>()).usingStringKeys()

        let error = await #expect(throws: StorageError.self) {
            try await images.set(.kitten, forKey: "../kitten")
        }

        #expect(error?.code == .invalidKey)
    }

    // MARK: Storages composition

    @Test func combinedStorageReadsMemoryFirstPullsFromDiskAndWritesBoth() async throws {
        let files = MemoryStorage<Filename, Data>()
        let imageStorage = Self.imageStorage(on: files)
        let kitten = try #require(Filename("kitten"))
        let puppy = try #require(Filename("puppy"))
        try await imageStorage.set(.kitten, forKey: kitten)

        let efficient = MemoryStorage<Filename, Image>().combined(with: imageStorage)
        let pulled = try await efficient.value(forKey: kitten)
        try await efficient.set(.puppy, forKey: puppy)

        #expect(pulled == .kitten)
        #expect(efficient.front.value(forKey: kitten) == .kitten)
        #expect(efficient.front.value(forKey: puppy) == .puppy)
        #expect(try await imageStorage.value(forKey: puppy) == .puppy)
    }

    // MARK: Read-only storage

    @Test func readOnlyStorageReads() async throws {
        let storage = MemoryStorage<String, Int>()
        storage.set(1, forKey: "a")

        let readOnly = storage.readOnly()

        #expect(try await readOnly.value(forKey: "a") == 1)
    }

    @Test func readOnlyStoragesAreMappedAndComposed() async throws {
        let files = MemoryStorage<String, Data>()
        files.set(Data("bundled".utf8), forKey: "greeting")
        let immutableFileStorage = files.string(encoding: .utf8).readOnly()

        let storage = MemoryStorage<String, String>()
            .backed(by: immutableFileStorage)
            .readOnly()
        let greeting = try await storage.value(forKey: "greeting")

        #expect(greeting == "bundled")
        #expect(storage.base.front.value(forKey: "greeting") == "bundled")
    }

    // MARK: Write-only storage

    @Test func writeOnlyStorageWrites() async throws {
        let storage = MemoryStorage<String, Int>()

        let writeOnly = storage.writeOnly()
        try await writeOnly.set(1, forKey: "a")

        #expect(storage.value(forKey: "a") == 1)
    }

    // MARK: Different ways of composition

    @Test func backedByDoesNotWriteTheBack() async throws {
        let back = MemoryStorage<String, Int>()

        let backed = MemoryStorage<String, Int>().backed(by: back)
        try await backed.set(1, forKey: "a")

        #expect(back.value(forKey: "a") == nil)
        #expect(try await backed.value(forKey: "a") == 1)
    }

    @Test func pushingWritesTheBackButNeverReadsIt() async throws {
        let back = MemoryStorage<String, Int>()
        back.set(0, forKey: "only-in-back")

        let pushing = MemoryStorage<String, Int>().pushing(to: back)
        try await pushing.set(1, forKey: "a")

        #expect(back.value(forKey: "a") == 1)
        #expect(try await pushing.value(forKey: "only-in-back") == nil)
    }

    @Test func writeOnlyStoragesArePushed() async throws {
        let log = MemoryStorage<String, Int>()
        let mirror = MemoryStorage<String, Int>()

        let both = log.writeOnly().pushing(to: mirror.writeOnly())
        try await both.set(1, forKey: "a")

        #expect(log.value(forKey: "a") == 1)
        #expect(mirror.value(forKey: "a") == 1)
    }

    // MARK: Single element storage

    @Test func singleKeyStorageHoldsOneJSONDictionary() async throws {
        let files = MemoryStorage<String, Data>()
        let settings = files.jsonDictionary().singleKey("settings")

        try await settings.set(["theme": "dark", "fontSize": 14])

        #expect(try await settings.value() == ["theme": "dark", "fontSize": 14])
        #expect(files.keys() == ["settings"])
    }

    // MARK: Synchronous storage

    @Test func memoryStorageIsUsedWithoutAwait() throws {
        let strings = MemoryStorage<String, String>()
        strings.set("hello", forKey: "hello")

        let existing = try #require(strings.value(forKey: "hello"))
        strings.set(existing.uppercased(), forKey: "hello")

        #expect(strings.value(forKey: "hello") == "HELLO")
    }

    // MARK: Mutating value for key

    @Test func updateChangesAValueInPlace() async throws {
        let arrays = MemoryStorage<String, [Int]>()
        arrays.set([1], forKey: "some-key")

        try arrays.update(forKey: "some-key") { $0?.append(10) }
        try await arrays.update(forKey: "other-key", default: []) { $0.append(10) }

        #expect(arrays.value(forKey: "some-key") == [1, 10])
        #expect(arrays.value(forKey: "other-key") == [10])
    }

    // MARK: Zipping storages

    @Test func zippedStorageReadsAndWritesPairs() async throws {
        let strings = MemoryStorage<String, String>()
        let numbers = MemoryStorage<String, Int>()

        let zipped = zip(strings, numbers)
        try await zipped.set(("shallows", 3), forKey: "another-key")
        let pair = try await zipped.value(forKey: "another-key")

        #expect(pair?.0 == "shallows")
        #expect(pair?.1 == 3)
        #expect(try await zipped.value(forKey: "some-key") == nil)
    }

    // MARK: Recovering from errors

    @Test func fallbackRecoversFromAFailedRead() async throws {
        let bytes = MemoryStorage<String, Data>()
        bytes.set(Data("corrupted".utf8), forKey: "a")

        let protected = bytes.json(Int.self).fallback { error in
            switch error.code {
            case .decodingFailed: 15
            default: -1
            }
        }

        #expect(try await protected.value(forKey: "a") == 15)
    }

    @Test func defaultingReadsTheDefaultForAbsentValues() async throws {
        let storage = MemoryStorage<String, Int>()

        let defaulted = storage.defaulting(to: -1)

        #expect(try await defaulted.value(forKey: "missing") == -1)
    }

    @Test func defaultingUpdateStartsFromTheDefault() async throws {
        let storage = MemoryStorage<String, [Int]>()

        try await storage.defaulting(to: []).update(forKey: "first") { $0.append(10) }

        #expect(storage.value(forKey: "first") == [10])
    }

    // MARK: Making your own storage

    /// A storage of one's own, as the README's last section builds it; an actor keeps it safe.
    private actor DictionaryStorage: Storage {
        private var values: [String: Int] = [:]

        func value(forKey key: String) async throws(StorageError) -> Int? {
            values[key]
        }

        func set(_ value: Int, forKey key: String) async throws(StorageError) {
            values[key] = value
        }

        func removeValue(forKey key: String) async throws(StorageError) {
            values[key] = nil
        }
    }

    @Test func ownStorageComposesAndPassesTheBehaviourSuite() async throws {
        let own = DictionaryStorage()

        let cached = MemoryStorage<String, Int>().combined(with: own)
        try await cached.set(1, forKey: "a")

        #expect(try await own.value(forKey: "a") == 1)
        try await StorageBehaviourSuite(keys: ["a", "b", "c"], values: [1, 2, 3]) { DictionaryStorage() }.run()
    }

    /// The codec of ``Codec``'s documentation: a row of fields as one comma-separated line.
    private struct CSVCodec: Codec {
        func encode(_ row: [String]) throws -> String { row.joined(separator: ",") }
        func decode(_ line: String) throws -> [String] { line.components(separatedBy: ",") }
    }

    @Test func ownCodecEncodesAndDecodes() async throws {
        let lines = MemoryStorage<String, String>()

        let rows = lines.coded(with: CSVCodec())
        try await rows.set(["Kharkiv", "1654"], forKey: "kharkiv")

        #expect(lines.value(forKey: "kharkiv") == "Kharkiv,1654")
        #expect(try await rows.value(forKey: "kharkiv") == ["Kharkiv", "1654"])
    }
}
