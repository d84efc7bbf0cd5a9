import Foundation
import Strata
import StrataObjects
import StrataTestSupport
import Testing
import _StrataInternals

@Suite(.onTestThreads) struct StoredTests {
    final class Session {
        @Stored var user: User?
        @Stored var launches: Int

        init(storage: some SynchronousDataStorage) {
            _user = Stored(wrappedValue: nil, "current-user", in: storage)
            _launches = Stored(wrappedValue: 0, "launches", in: storage)
        }
    }

    @Test func assignmentsAreSavedAndLoadedByTheNextProperty() throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let disk = try DiskStorage(url: scratch.url)
        let dax = User(name: "Dax")
        do {
            let session = Session(storage: disk)
            #expect(session.user == nil)
            session.user = dax
            session.launches += 1
        }

        let reopened = Session(storage: try DiskStorage(url: scratch.url))

        #expect(reopened.user == dax)
        #expect(reopened.launches == 1)
        #expect(reopened.$user.lastError == nil)
    }

    @Test func anUndecodableStoredValueKeepsTheDefaultAndSaysWhy() throws {
        let memory = MemoryStorage<String, Data>()
        memory.set(Data("not json".utf8), forKey: "launches")

        let session = Session(storage: memory)

        #expect(session.launches == 0)
        #expect(session.$launches.lastError?.code == .decodingFailed)
        #expect(session.$launches.lastError?.undecodedBytes?.prefix == Data("not json".utf8))
        #expect(memory.value(forKey: "launches") == Data("not json".utf8))
    }

    @Test func aFailedWriteKeepsTheValueAndIsRetriedBySave() throws {
        final class FlakyStorage: SynchronousDataStorage {
            let failing = LockedFlag(true)
            let memory = MemoryStorage<String, Data>()
            func storedData(forKey key: String) throws(StorageError) -> Data? { memory.value(forKey: key) }
            func storeData(_ data: Data, forKey key: String) throws(StorageError) {
                if failing.value { throw StorageError(.io, key: key, storage: "flaky", message: "disk full") }
                memory.set(data, forKey: key)
            }
            func removeData(forKey key: String) throws(StorageError) {
                if failing.value { throw StorageError(.io, key: key, storage: "flaky", message: "read-only") }
                memory.removeValue(forKey: key)
            }
        }
        let storage = FlakyStorage()
        let session = Session(storage: storage)

        session.launches = 5

        #expect(session.launches == 5)
        #expect(session.$launches.lastError?.code == .io)
        storage.failing.value = false
        try session.$launches.save()
        #expect(session.$launches.lastError == nil)
        #expect(Session(storage: storage).launches == 5)
    }

    @Test func assigningNilRemovesTheStoredValue() throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let disk = try DiskStorage(url: scratch.url)
        let session = Session(storage: disk)
        session.user = User(name: "Dax")
        #expect(try disk.value(forKey: "current-user") != nil)

        session.user = nil

        #expect(try disk.value(forKey: "current-user") == nil, "nil is stored as nothing, not as the bytes null")
        #expect(session.$user.lastError == nil)
        #expect(Session(storage: try DiskStorage(url: scratch.url)).user == nil)
    }

    @Test func reloadingAnOptionalThatAnotherOwnerSetToNilGivesNil() throws {
        let memory = MemoryStorage<String, Data>()
        let first = Session(storage: memory)
        let second = Session(storage: memory)
        let dax = User(name: "Dax")
        first.user = dax
        try second.$user.reload()
        #expect(second.user == dax)

        first.user = nil
        try second.$user.reload()
        first.launches = 3
        memory.removeValue(forKey: "launches")
        try first.$launches.reload()

        #expect(second.user == nil)
        #expect(first.launches == 3, "a property that cannot be nil keeps its value when nothing is stored")
    }

    @Test func aFailedRemovalKeepsNilInMemoryAndIsRetriedBySave() throws {
        final class ReadOnlyStorage: SynchronousDataStorage {
            let failing = LockedFlag(false)
            let memory = MemoryStorage<String, Data>()
            func storedData(forKey key: String) throws(StorageError) -> Data? { memory.value(forKey: key) }
            func storeData(_ data: Data, forKey key: String) throws(StorageError) { memory.set(data, forKey: key) }
            func removeData(forKey key: String) throws(StorageError) {
                if failing.value { throw StorageError(.io, key: key, storage: "read-only", message: "read-only") }
                memory.removeValue(forKey: key)
            }
        }
        let storage = ReadOnlyStorage()
        let session = Session(storage: storage)
        session.user = User(name: "Dax")
        storage.failing.value = true

        session.user = nil

        #expect(session.user == nil)
        #expect(session.$user.lastError?.code == .io)
        storage.failing.value = false
        try session.$user.save()
        #expect(storage.memory.value(forKey: "current-user") == nil)
    }
}

/// A Boolean any task may read and set.
final class LockedFlag: Sendable {
    private let state: LockedState<Bool>
    init(_ value: Bool) { state = LockedState(value) }
    var value: Bool {
        get { state.withLock { $0 } }
        set { state.withLock { $0 = newValue } }
    }
}
