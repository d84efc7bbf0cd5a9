import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// Every storage refuses limits and lifetimes it cannot use in the same words, naming the option,
/// before it stores anything.
@Suite(.onTestThreads) struct StorageLimitsTests {
    /// An option set to a value that is not positive, and the name the error must give it.
    struct Refused: Sendable, CustomTestStringConvertible {
        var option: String
        var memory: @Sendable () throws -> Void
        var disk: @Sendable (URL) throws -> Void
        var testDescription: String { option }
    }

    static let refused: [Refused] = [
        Refused(
            option: "maximumCount",
            memory: { _ = try MemoryStorage<String, Data>(maximumCount: 0) },
            disk: { _ = try DiskStorage(url: $0, options: DiskStorage.Options(maximumCount: -1)) }
        ),
        Refused(
            option: "maximumCost",
            memory: { _ = try MemoryStorage<String, Data>(maximumCost: -5) },
            disk: { _ = try DiskStorage(url: $0, options: DiskStorage.Options(maximumByteCount: 0)) }
        ),
        Refused(
            option: "timeToLive",
            memory: { _ = try MemoryStorage<String, Data>(timeToLive: .seconds(-1)) },
            disk: { _ = try DiskStorage(url: $0, options: DiskStorage.Options(timeToLive: .zero)) }
        ),
    ]

    @Test(arguments: refused)
    func aLimitOrLifetimeThatIsNotPositiveIsRefusedByName(_ refused: Refused) throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }

        let memory = #expect(throws: StorageError.self) { try refused.memory() }
        let disk = #expect(throws: StorageError.self) { try refused.disk(folder.url) }

        #expect(memory?.code == .invalidConfiguration)
        #expect(memory?.message.contains("\(refused.option) must be positive") == true, "\(String(describing: memory))")
        #expect(disk?.code == .invalidConfiguration)
        let diskOption = refused.option == "maximumCost" ? "maximumByteCount" : refused.option
        #expect(disk?.message.contains("\(diskOption) must be positive") == true, "\(String(describing: disk))")
    }

    @Test func aTimeToLiveBesideAnExpiryIsRefusedByEveryStorageAlike() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        var options = DiskStorage.Options(timeToLive: .seconds(60))
        options.expiry = .afterWrite(.seconds(10))

        let memory = #expect(throws: StorageError.self) {
            try MemoryStorage<String, Data>(timeToLive: .seconds(60), expiry: .afterWrite(.seconds(10)))
        }
        let disk = #expect(throws: StorageError.self) { try DiskStorage(url: folder.url, options: options) }

        #expect(memory?.message == disk?.message)
        #expect(memory?.message.contains("not both") == true)
    }
}
