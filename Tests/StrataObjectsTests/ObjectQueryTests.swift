import Foundation
import Strata
import StrataObjects
import StrataTestSupport
import Testing

/// Queries over 10,000 random notes, each checked against filtering and sorting the same notes in
/// memory. Each predicate is one of Vellum's query finders, written with `#Predicate`.
@Suite(.onTestThreads) struct ObjectQueryTests {
    /// One store of 10,000 notes for every test here, built once.
    static let fixture: Task<(ObjectStore<Note>, [Note], ScratchFolder), any Error> = Task {
        let scratch = try ScratchFolder()
        var generator = SeededGenerator(seed: 0x5EED)
        let words = ["premium", "basic", "alpha", "beta", "gamma", "delta", "omega", "Premium"]
        let tagPool = ["red", "green", "blue", "cyan", "magenta"]
        let notes = (0..<10_000).map { index in
            Note(
                id: UUID(uuid: randomUUIDBytes(&generator)),
                title: "\(words[Int(generator.next() % 8)])-\(generator.next() % 1000)",
                body: Bool.random(using: &generator) ? "has body \(index)" : "",
                tags: tagPool.filter { _ in generator.next() % 3 == 0 },
                priority: Int(generator.next() % 7) - 3,
                rating: generator.next() % 4 == 0 ? nil : Double(generator.next() % 50) / 10
            )
        }
        let store = try ObjectStore<Note>(url: scratch.child("notes"), options: .init(prettyPrinted: false))
        try await store.save(contentsOf: notes)
        // Reopen, so queries run over objects read back from the files.
        return (try ObjectStore<Note>(url: scratch.child("notes")), notes, scratch)
    }

    private func check(
        _ predicate: Predicate<Note>,
        sortedBy sort: [SortDescriptor<Note>] = [],
        limit: Int? = nil,
        expected filter: @escaping @Sendable (Note) -> Bool,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let (store, notes, _) = try await Self.fixture.value
        // Filtering and sorting 10,000 notes takes a while in a debug build: on the tests' own
        // threads, so the cooperative pool stays free for the timers of the tests beside it.
        let expected = await TestThreads.run {
            var expected = notes.filter(filter)
            expected.sort { left, right in
                for descriptor in sort {
                    let order = descriptor.compare(left, right)
                    if order != .orderedSame { return order == .orderedAscending }
                }
                return left.id.uuidString < right.id.uuidString
            }
            if let limit { expected = Array(expected.prefix(limit)) }
            return expected
        }

        let found = try await store.objects(matching: predicate, sortedBy: sort, limit: limit)

        #expect(
            expected.count > 0 || limit == 0,
            "a predicate that matches nothing proves little",
            sourceLocation: sourceLocation
        )
        if sort.isEmpty && limit == nil {
            #expect(Set(found) == Set(expected), sourceLocation: sourceLocation)
            #expect(found.count == expected.count, sourceLocation: sourceLocation)
        } else if sort.isEmpty {
            #expect(found.count == expected.count, sourceLocation: sourceLocation)
            let allMatch = found.allSatisfy(filter)
            #expect(allMatch, sourceLocation: sourceLocation)
        } else {
            #expect(found == expected, sourceLocation: sourceLocation)
        }
        #expect(
            try await store.count(matching: predicate) == notes.filter(filter).count,
            sourceLocation: sourceLocation
        )
    }

    @Test func stringContains() async throws {  // Vellum: .contains(string:)
        try await check(#Predicate { $0.title.contains("premium") }, expected: { $0.title.contains("premium") })
    }

    @Test func stringMatchesRegex() async throws {  // Vellum: .matches(regex:)
        let pattern = try Regex("^(alpha|beta)-[0-9]{2}$")
        try await check(
            #Predicate { $0.title.contains(pattern) },
            // The same rule written by hand (a Regex is not Sendable, and an independent oracle
            // is a better check anyway).
            expected: { note in
                for prefix in ["alpha-", "beta-"] where note.title.hasPrefix(prefix) {
                    let rest = note.title.dropFirst(prefix.count)
                    return rest.count == 2 && rest.allSatisfy { ("0"..."9").contains($0) }
                }
                return false
            }
        )
    }

    @Test func collectionContainsAnElement() async throws {  // Vellum: .contains(with:)
        try await check(#Predicate { $0.tags.contains("red") }, expected: { $0.tags.contains("red") })
    }

    @Test func collectionContainsAtLeastOne() async throws {  // Vellum: .contains(atLeastOne:)
        let wanted = ["cyan", "magenta"]
        try await check(
            #Predicate { note in note.tags.contains { wanted.contains($0) } },
            expected: { note in note.tags.contains { wanted.contains($0) } }
        )
    }

    @Test func collectionContainsAll() async throws {  // Vellum: .contains(all:)
        let wanted = ["red", "blue"]
        try await check(
            #Predicate { note in wanted.allSatisfy { note.tags.contains($0) } },
            expected: { note in wanted.allSatisfy { note.tags.contains($0) } }
        )
    }

    @Test func collectionCountComparisons() async throws {  // Vellum: countEqual/Greater/Less…
        try await check(#Predicate { $0.tags.count == 2 }, expected: { $0.tags.count == 2 })
        try await check(#Predicate { $0.tags.count > 2 }, expected: { $0.tags.count > 2 })
        try await check(#Predicate { $0.tags.count <= 1 }, expected: { $0.tags.count <= 1 })
    }

    @Test func equalityAndOrdering() async throws {  // Vellum: isEqual/isNotEqual/greater/less…
        try await check(#Predicate { $0.priority == 2 }, expected: { $0.priority == 2 })
        try await check(#Predicate { $0.priority != 0 }, expected: { $0.priority != 0 })
        try await check(
            #Predicate { $0.priority >= 1 && $0.priority < 3 },
            expected: { $0.priority >= 1 && $0.priority < 3 }
        )
    }

    @Test func optionalComparisons() async throws {  // Vellum: .isNotEqual(nil)
        try await check(#Predicate { $0.rating != nil }, expected: { $0.rating != nil })
        try await check(
            #Predicate { ($0.rating ?? 0) > 3.5 },
            expected: { ($0.rating ?? 0) > 3.5 }
        )
        try await check(
            #Predicate { note in
                if let rating = note.rating { rating < 1 } else { false }
            },
            expected: { ($0.rating.map { $0 < 1 }) ?? false }
        )
    }

    // Vellum: findWhere + sorted + limitResults
    @Test func combinedWithSortOnSeveralPropertiesAndLimit() async throws {
        try await check(
            #Predicate { $0.title.contains("premium") && !$0.body.isEmpty },
            sortedBy: [SortDescriptor(\.priority), SortDescriptor(\.title, order: .reverse)],
            limit: 10,
            expected: { $0.title.contains("premium") && !$0.body.isEmpty }
        )
        try await check(
            #Predicate { $0.priority > -2 },
            sortedBy: [SortDescriptor(\.title), SortDescriptor(\.priority, order: .reverse)],
            expected: { $0.priority > -2 }
        )
    }

    @Test(arguments: [1, 256, 257, 5_000])
    func sortedLimitsOnEitherSideOfTheTopMatchesPathAgree(limit: Int) async throws {
        try await check(
            #Predicate { $0.priority != 0 },
            sortedBy: [SortDescriptor(\.rating, order: .reverse), SortDescriptor(\.title)],
            limit: limit,
            expected: { $0.priority != 0 }
        )
    }

    @Test func limitWithoutSort() async throws {
        try await check(#Predicate { $0.tags.isEmpty }, limit: 25, expected: { $0.tags.isEmpty })
    }

    @Test func manyRandomPredicatesMatchTheInMemoryFilter() async throws {
        var generator = SeededGenerator(seed: 42)
        for _ in 0..<40 {
            let low = Int(generator.next() % 7) - 3
            let high = low + Int(generator.next() % 4)
            let tag = ["red", "green", "blue", "cyan", "magenta"][Int(generator.next() % 5)]
            let word = ["premium", "alpha", "gamma", "a-1", "9"][Int(generator.next() % 5)]
            let limit = Int(generator.next() % 50) + 1
            try await check(
                #Predicate {
                    ($0.priority >= low && $0.priority <= high) || $0.tags.contains(tag) || $0.title.contains(word)
                },
                sortedBy: [SortDescriptor(\.priority, order: .reverse), SortDescriptor(\.title)],
                limit: limit,
                expected: {
                    ($0.priority >= low && $0.priority <= high) || $0.tags.contains(tag) || $0.title.contains(word)
                }
            )
        }
    }

    @Test func firstFindsTheFirstInOrder() async throws {
        let (store, notes, _) = try await Self.fixture.value

        let first = try await store.first(
            matching: #Predicate { $0.tags.contains("blue") },
            sortedBy: [SortDescriptor(\.title)]
        )

        let expected = notes.filter { $0.tags.contains("blue") }.min {
            ($0.title, $0.id.uuidString) < ($1.title, $1.id.uuidString)
        }
        #expect(first == expected)
    }

    @Test func queriesSeeTheStoresOwnWrites() async throws {
        let store = ObjectStore<Note>.inMemory()
        try await store.save(Note(title: "one", priority: 1))
        #expect(try await store.count(matching: #Predicate { $0.priority == 1 }) == 1)

        let second = Note(title: "two", priority: 1)
        try await store.save(second)
        try await store.update(withID: second.id) { $0.priority = 2 }

        #expect(try await store.objects(matching: #Predicate { $0.priority == 1 }).map(\.title) == ["one"])
        #expect(try await store.objects(matching: #Predicate { $0.priority == 2 }).map(\.title) == ["two"])
    }

    @Test func aThrowingPredicateGivesQueryFailed() async throws {
        let store = ObjectStore<Note>.inMemory()
        try await store.save(Note(title: "x", tags: []))

        let error = await #expect(throws: StorageError.self) {
            try await store.objects(matching: #Predicate { $0.tags[0] == "red" })
        }

        #expect(error?.code == .queryFailed)
    }
}

/// SplitMix64, so every run builds the same objects.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var value = state
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }
}

func randomUUIDBytes(_ generator: inout SeededGenerator) -> uuid_t {
    let a = generator.next()
    let b = generator.next()
    func byte(_ word: UInt64, _ index: Int) -> UInt8 { UInt8(truncatingIfNeeded: word >> (index * 8)) }
    return (
        byte(a, 0), byte(a, 1), byte(a, 2), byte(a, 3), byte(a, 4), byte(a, 5), byte(a, 6), byte(a, 7),
        byte(b, 0), byte(b, 1), byte(b, 2), byte(b, 3), byte(b, 4), byte(b, 5), byte(b, 6), byte(b, 7)
    )
}

extension ObjectQueryTests {
    @Test func aClosureQueryMatchesThePredicateQuery() async throws {
        let (store, _, _) = try await Self.fixture.value
        let sort = [SortDescriptor(\Note.priority), SortDescriptor(\Note.title)]

        let byClosure = try await store.objects(where: { $0.tags.contains("green") && $0.priority < 0 }, sortedBy: sort)
        let byPredicate = try await store.objects(
            matching: #Predicate { $0.tags.contains("green") && $0.priority < 0 },
            sortedBy: sort
        )

        #expect(!byClosure.isEmpty)
        #expect(byClosure == byPredicate)
    }
}
