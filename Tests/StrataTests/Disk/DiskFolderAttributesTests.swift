import Foundation
import StrataTestSupport
import Testing
import _StrataInternals

@testable import Strata

/// A disk folder an app can ship: its data-protection class and backup exclusion are set when it
/// opens and again when it is recreated, through the one platform interface; an app group's
/// container is found through it; on Linux, the exclusion is a real `CACHEDIR.TAG`.
@Suite(.onTestThreads) struct DiskFolderAttributesTests {
    private static func options(
        _ attributes: RecordingFolderAttributes,
        protection: FileProtection? = nil,
        excluded: Bool = false
    ) -> DiskStorage.Options {
        var options = DiskStorage.Options()
        options.folderAttributes = attributes
        options.fileProtection = protection
        options.isExcludedFromBackup = excluded
        return options
    }

    @Test(arguments: FileProtection.allCases)
    func openingSetsTheProtectionAndTheExclusion(_ protection: FileProtection) throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let attributes = RecordingFolderAttributes()
        let storage = try DiskStorage(
            url: folder.child("cache"),
            options: Self.options(attributes, protection: protection, excluded: true)
        )
        let root = folder.child("cache").standardizedFileURL.path
        #expect(attributes.calls == ["protect \(protection.rawValue) \(root)", "exclude \(root)"])
        try storage.set(Data("a".utf8), forKey: "a")
        #expect(attributes.calls.count == 2)
    }

    @Test func nothingIsAskedOfThePlatformByDefault() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let attributes = RecordingFolderAttributes()
        let storage = try DiskStorage(url: folder.child("cache"), options: Self.options(attributes))
        try storage.set(Data("a".utf8), forKey: "a")
        #expect(attributes.calls.isEmpty)
    }

    @Test func aFolderRemovedUnderTheStorageIsProtectedAgainWhenRecreated() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let attributes = RecordingFolderAttributes()
        let storage = try DiskStorage(
            url: folder.child("cache"),
            options: Self.options(attributes, protection: .complete, excluded: true)
        )
        try FileManager.default.removeItem(at: folder.child("cache"))

        try storage.set(Data("kept".utf8), forKey: "k")

        let root = folder.child("cache").standardizedFileURL.path
        #expect(
            attributes.calls
                == Array(repeating: ["protect complete \(root)", "exclude \(root)"], count: 2).flatMap { $0 }
        )
        #expect(try storage.value(forKey: "k") == Data("kept".utf8))
    }

    @Test func aPlatformThatRefusesFailsTheOpenWithAClearError() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let attributes = RecordingFolderAttributes(failingWith: EPERM)
        let error = #expect(throws: StorageError.self) {
            _ = try DiskStorage(url: folder.child("cache"), options: Self.options(attributes, protection: .complete))
        }
        #expect(error?.code == .io)
        #expect(error?.message.contains("cannot protect") == true)
        #expect(error?.message.contains("errno \(EPERM)") == true)
    }

    @Test func anAppGroupLocationOpensInTheGroupsContainer() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let attributes = RecordingFolderAttributes(containers: ["group.com.example.feed": folder.url])
        let storage = try DiskStorage(
            folder: "images",
            in: .appGroup("group.com.example.feed"),
            options: Self.options(attributes)
        )
        #expect(storage.url.standardizedFileURL == folder.child("images").standardizedFileURL)
        #expect(attributes.calls == ["container group.com.example.feed"])
    }

    @Test func aGroupTheAppMayNotUseIsRefusedNamingTheEntitlement() {
        let attributes = RecordingFolderAttributes()
        let error = #expect(throws: StorageError.self) {
            _ = try DiskStorage(folder: "images", in: .appGroup("group.other"), options: Self.options(attributes))
        }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.message.contains("com.apple.security.application-groups") == true)
    }

    @Test(arguments: ["", "a/b", "..", "."])
    func aMalformedGroupIdentifierIsRefused(_ identifier: String) {
        let attributes = RecordingFolderAttributes(containers: [identifier: URL(fileURLWithPath: "/tmp")])
        let error = #expect(throws: StorageError.self) {
            _ = try DiskStorage(folder: "images", in: .appGroup(identifier), options: Self.options(attributes))
        }
        #expect(error?.code == .invalidConfiguration)
        #expect(attributes.calls.isEmpty)
    }

    #if os(Linux)
    @Test func onLinuxAnExcludedFolderCarriesACacheDirectoryTag() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        var options = DiskStorage.Options()
        options.isExcludedFromBackup = true
        options.fileProtection = .complete  // accepted; Linux has no protection classes
        let tag = folder.child("cache").appendingPathComponent("CACHEDIR.TAG")

        let storage = try DiskStorage(url: folder.child("cache"), options: options)
        let text = try String(contentsOf: tag, encoding: .utf8)
        #expect(text.hasPrefix("Signature: 8a477f597d28d172789f06886806bc55"))

        // Reopened, the folder keeps one tag and its values; removed, the tag comes back.
        try storage.set(Data("v".utf8), forKey: "k")
        let reopened = try DiskStorage(url: folder.child("cache"), options: options)
        #expect(try reopened.value(forKey: "k") == Data("v".utf8))
        try FileManager.default.removeItem(at: folder.child("cache"))
        try reopened.set(Data("w".utf8), forKey: "k")
        #expect(FileManager.default.fileExists(atPath: tag.path))
        #expect(try DiskStorage(url: folder.child("cache"), options: options).value(forKey: "k") == Data("w".utf8))
        // Only the tag and Strata's own files at the root: nothing else was left behind.
        let root = try FileManager.default.contentsOfDirectory(atPath: folder.child("cache").path)
        #expect(root.filter { !$0.hasPrefix("strata-") && $0.count != 2 }.sorted() == ["CACHEDIR.TAG"])
    }

    @Test func onLinuxAnAppGroupIsAFolderOfTheUsersDataHome() {
        let environment = ProcessInfo.processInfo.environment
        let expected =
            environment["XDG_DATA_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".local/share").path
        let container = SystemFolderAttributes().container(ofAppGroup: "group.com.example.feed")
        #expect(
            container?.standardizedFileURL.path
                == URL(fileURLWithPath: expected).appendingPathComponent("group.com.example.feed").standardizedFileURL
                .path
        )
    }
    #endif
}
