import Foundation
import StrataTestSupport
import Testing
import _StrataInternals

@testable import Strata

/// The pieces a disk read is made of, each checked against the slower code it replaced: UTF-8
/// validation of a record's key, the NFC quick check, the file buffer handed to `Data` without a
/// copy, and the access recorded at a slot found earlier.
@Suite(.onTestThreads) struct DiskReadPathTests {
    // MARK: UTF-8 validation

    /// Every case `String(validating:as:)` knows: valid text of every width, a U+FFFD that is
    /// really there, and each kind of invalid sequence.
    static let utf8Cases: [[UInt8]] = [
        [],
        Array("key-0001".utf8),
        Array("café ☕︎ 𝄞 日本語".utf8),
        Array("\u{FFFD} is a real replacement character".utf8),
        [0x80],  // a continuation byte alone
        [0x61, 0xC3],  // a sequence cut short at the end
        [0xC3, 0x28],  // a lead byte followed by no continuation
        [0xC0, 0xAF],  // an overlong "/"
        [0xE0, 0x80, 0xAF],  // an overlong three-byte form
        [0xED, 0xA0, 0x80],  // a UTF-16 surrogate
        [0xF4, 0x90, 0x80, 0x80],  // above U+10FFFF
        [0xFF, 0xFE],  // bytes that never occur
        Array("valid start ".utf8) + [0xE2, 0x82] + Array(" then a cut sequence".utf8),
    ]

    @Test(arguments: utf8Cases)
    func keyBytesValidateExactlyAsTheStandardLibraryDoes(bytes: [UInt8]) {
        let expected = String(validating: bytes, as: UTF8.self)
        let validated = bytes.withUnsafeBytes { String(validatingUTF8Bytes: $0) }
        #expect(validated == expected)
        if let validated { #expect(Array(validated.utf8) == bytes) }
    }

    @Test func randomBytesValidateExactlyAsTheStandardLibraryDoes() {
        var random = SplitMix64(seed: 0x5EED)
        // Mostly ASCII with some high bytes, so that both valid and invalid inputs are common.
        let alphabet: [UInt8] = Array(0x20...0x7E) + [0x80, 0xA9, 0xBF, 0xC3, 0xCC, 0xE2, 0xED, 0xF0, 0xF4, 0xFF]
        var valid = 0
        for _ in 0..<20_000 {
            let count = Int(random.next() % 24)
            let bytes = (0..<count).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] }
            let expected = String(validating: bytes, as: UTF8.self)
            let validated = bytes.withUnsafeBytes { String(validatingUTF8Bytes: $0) }
            #expect(validated == expected, "\(bytes)")
            if expected != nil { valid += 1 }
        }
        // Both outcomes were exercised.
        #expect(valid > 1_000 && valid < 19_000)
    }

    // MARK: NFC

    /// A decomposed accent at every position of keys longer than one eight-byte word, and text
    /// whose bytes are high but below the quick check's 0xCC: the result is always NFC, and text
    /// already in NFC comes back unchanged.
    @Test func nfcQuickCheckFindsADecomposedAccentWhereverItIs() {
        for length in [1, 7, 8, 9, 15, 16, 17, 31, 40] {
            for position in 0..<length {
                var scalars = Array(repeating: "a", count: length)
                scalars[position] = "e\u{301}"
                let key = scalars.joined()
                let normalized = key.nfcNormalized
                #expect(Array(normalized.utf8) == Array(key.precomposedStringWithCanonicalMapping.utf8))
                #expect(normalized.utf8.count == key.utf8.count - 1, "length \(length), position \(position)")
            }
        }
        for key in ["", "key-0001", String(repeating: "é", count: 20), "ab" + String(repeating: "ß", count: 9)] {
            // Precomposed é is C3 A9 and ß is C3 9F: high bytes, all below 0xCC.
            #expect(Array(key.nfcNormalized.utf8) == Array(key.utf8))
        }
        // A byte at or above 0xCC that is not a combining mark (U+0400, Cyrillic, is D0 80) is
        // left to Foundation, which keeps the text as it is.
        let cyrillic = String(repeating: "Д", count: 12)
        #expect(cyrillic.nfcNormalized == cyrillic)
    }

    // MARK: Paths

    @Test(arguments: [("", ""), ("/tmp/cache", "ab/cdef"), ("/tmp/café", "日本/語"), ("root", ""), ("", "name")])
    func aPathJoinsItsPartsAsPlusDoes(folder: String, name: String) {
        let joined = String.path(folder, name)
        #expect(joined == folder + "/" + name)
        #expect(Array(joined.utf8) == Array(folder.utf8) + [UInt8(ascii: "/")] + Array(name.utf8))
    }

    // MARK: File bytes handed to Data

    /// Writes a record file of `value` for `key` at `path`, as a storage would.
    private static func writeRecord(_ value: Data, forKey key: String, to path: String) throws {
        let header = DiskRecordHeader(
            key: key,
            payloadLength: value.count,
            created: 0,
            expiry: .infinity,
            payloadChecksum: DiskRecordHeader.checksum(ofPayload: value)
        )
        try (Data(header.encoded()) + value).write(to: URL(fileURLWithPath: path))
    }

    @Test(arguments: [0, 1, 14, 15, 1_024, 1 << 20])
    func aValueReadFromItsFileOutlivesTheBufferItWasReadInto(count: Int) throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let value = Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 5) })
        let path = folder.path + "/record"
        try Self.writeRecord(value, forKey: "key", to: path)
        var data: Data?
        do {
            let file = try #require(try SystemCalls.readFile(path))
            let (decoded, payload) = try DiskRecordHeader.decodeRecord(file.bytes)
            #expect(decoded.key == "key")
            data = file.movingIntoData(payload)
        }
        // The file's object is gone; the bytes it read live on in the value alone.
        #expect(data == value)
        #expect(data?.startIndex == 0)
    }

    @Test func valuesReadFromDiskAreTheirOwnBytes() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let storage = try DiskStorage(url: folder.url)
        let values = (0..<40).map { index in Data((0..<(index * 97)).map { UInt8(truncatingIfNeeded: $0 &+ index) }) }
        for (index, value) in values.enumerated() { try storage.set(value, forKey: "key-\(index)") }
        // Read twice, keeping every value: no value shares or reuses another's buffer.
        let first = try (0..<values.count).map { try storage.value(forKey: "key-\($0)") }
        let second = try (0..<values.count).map { try storage.value(forKey: "key-\($0)") }
        #expect(first == values.map(Optional.some))
        #expect(second == values.map(Optional.some))
    }

    // MARK: Reading a file of known size

    @Test func aFileOfKnownSizeIsReadWholeAndAnythingElseIsLeftToTheOrdinaryRead() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let path = folder.path + "/file"
        let bytes = Data((0..<1_000).map { UInt8(truncatingIfNeeded: $0) })
        try bytes.write(to: URL(fileURLWithPath: path))
        func read(_ path: String, expecting size: Int) -> FileBytes? {
            path.withCString { FileBytes.read($0, expectedSize: size) }
        }
        // As expected, or shorter (the checksum then tells): the bytes there are.
        #expect(read(path, expecting: 1_000).map { Data($0.bytes) } == bytes)
        #expect(read(path, expecting: 1_500).map { Data($0.bytes) } == bytes)
        // Longer than expected, missing, a folder, a FIFO: nil, at once.
        #expect(read(path, expecting: 999) == nil)
        #expect(read(folder.path + "/missing", expecting: 10) == nil)
        #expect(read(folder.path, expecting: 10) == nil)
        let fifo = folder.path + "/fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        #expect(read(fifo, expecting: 10) == nil)
    }

    /// Another process replaced a known key's file with a longer value: the read that expected
    /// the old size falls back to the ordinary read and returns the new value.
    @Test func aKnownKeyRewrittenLongerElsewhereReadsItsNewValue() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let storage = try DiskStorage(url: folder.url)
        let other = try DiskStorage(url: folder.url)
        try storage.set(Data("short".utf8), forKey: "key")
        #expect(try storage.value(forKey: "key") == Data("short".utf8))
        let longer = Data(repeating: 7, count: 5_000)
        try other.set(longer, forKey: "key")
        #expect(try storage.value(forKey: "key") == longer)
        try other.set(Data("tiny".utf8), forKey: "key")
        #expect(try storage.value(forKey: "key") == Data("tiny".utf8))
    }

    // MARK: Opening

    /// A key found in two files (a collision chain a crash interrupted): opening keeps the newer
    /// file, whichever probe holds it and whether the index comes from the files or a snapshot,
    /// removes the older, and the newer is the most recently used of its time.
    @Test(arguments: [(false, false), (false, true), (true, false), (true, true)])
    func aKeyInTwoFilesOpensAsTheNewerOne(newerAtFirstProbe: Bool, fromSnapshot: Bool) throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        var options = DiskStorage.Options()
        options.recencyResolution = .zero
        let storage = try DiskStorage(url: folder.url, options: options)
        for key in ["a", "b"] { try storage.set(Data(key.utf8), forKey: key) }
        let base = folder.path + "/" + relativePath(forKey: "key")
        let old = Data("old".utf8)
        let new = Data("new".utf8)
        for (path, value, age) in [
            (newerAtFirstProbe ? base : base + "-1", new, 10.0),
            (newerAtFirstProbe ? base + "-1" : base, old, 100.0),
        ] {
            try Self.writeRecord(value, forKey: "key", to: path)
            try FileManager.default.setAttributes(
                [.modificationDate: Date(timeIntervalSinceNow: -age)],
                ofItemAtPath: path
            )
        }
        // "a" and "b" are newer than both files.
        if fromSnapshot {
            try folder.ageValueFolders(by: 5)
            try storage.saveIndex()
        }

        var limited = options
        limited.maximumCount = 3
        let reopened = try DiskStorage(url: folder.url, options: limited)
        #expect(reopened.openedFolders.fromSnapshot == (fromSnapshot ? 256 : 0))
        #expect(try reopened.value(forKey: "key") == new)
        #expect(reopened.count == 3)
        #expect(Set(StoreFiles(of: folder.url).keys.values) == ["a", "b", "key"], "the older file is gone")
        // "key" was read last, so "a", the least recently used, makes room for "c".
        try reopened.set(Data("c".utf8), forKey: "c")
        #expect(Set(reopened.keys()) == ["b", "c", "key"])
    }

    // MARK: Recording an access at a known slot

    @Test func anAccessAtASlotThatNoLongerHoldsTheKeyIsRecordedForTheKey() {
        var index = CacheIndex<String, Int>(maximumCount: 2, maximumCost: .max, queue: LRUQueue())
        var removed = CacheIndex<String, Int>.Removed()
        index.set(1, forKey: "a", cost: 1, expiry: .infinity, removed: &removed)
        index.set(2, forKey: "b", cost: 1, expiry: .infinity, removed: &removed)
        let slotOfA = index.index["a"]!
        // The slot is right: the value comes back and "a" becomes the most recently used, so
        // the next insertion evicts "b".
        #expect(index.recordAccess(forKey: "a", slot: slotOfA) == 1)
        index.set(3, forKey: "c", cost: 1, expiry: .infinity, removed: &removed)
        #expect(index.index["b"] == nil && index.index["a"] != nil)
        // "a" leaves and "d" may take its slot: the old slot no longer answers for "a"...
        index.removeValue(forKey: "a", removed: &removed)
        index.set(4, forKey: "d", cost: 1, expiry: .infinity, removed: &removed)
        #expect(index.recordAccess(forKey: "a", slot: slotOfA) == nil)
        // ...and a slot past the end, or none, falls back to the lookup.
        #expect(index.recordAccess(forKey: "d", slot: 1_000) == 4)
        #expect(index.recordAccess(forKey: "c", slot: nil) == 3)
    }
}
