#if Vapor
import Foundation
import Strata
import StrataVapor
import Testing
import Vapor

/// A file that imports Vapor, whose `Storage` struct would otherwise clash, names Strata's
/// `Storage` protocol unqualified, as every README example does; Vapor's struct keeps its
/// qualified name.
@Suite struct StorageNameTests {
    /// Written as an app would, with no module name in front of `Storage`.
    static func remember(
        _ value: Data,
        forKey key: String,
        in storage: some Storage<String, Data>
    ) async throws
        -> Data?
    {
        try await storage.set(value, forKey: key)
        return try await storage.value(forKey: key)
    }

    @Test func storageMeansStrataStorageBesideVapor() async throws {
        let memory = MemoryStorage<String, Data>(maximumCount: 10)
        let erased: any Storage<String, Data> = memory

        #expect(try await Self.remember(Data("v".utf8), forKey: "k", in: memory) == Data("v".utf8))
        #expect(try await erased.value(forKey: "k") == Data("v".utf8))
        #expect(String(describing: Vapor.Storage.self) == "Storage")
    }
}
#endif
