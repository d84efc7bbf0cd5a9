import Foundation
import Logging
import _StrataInternals

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension DiskStorage {
    /// Changes to the index, or values found when opening, from which a snapshot is saved on its
    /// own: smaller folders open fast enough from their files.
    static let snapshotThreshold = 1_000

    /// Saves a snapshot of the index at the root of the folder (`strata-index.bin`), so that the
    /// next open reads it instead of every file's header. The storage also saves one on its own,
    /// on Strata's I/O threads, once a thousand values (or an eighth of them) changed since the
    /// last, and when it is released after such changes; call this where a process is about to
    /// exit. Folders of the layout made before manifest version 2 keep no snapshot.
    ///
    /// A snapshot never decides what a read returns: opening trusts a value folder's part only if
    /// the folder has not changed since it was saved, and reads check every file they return.
    ///
    /// - Throws: ``StorageError/Code/io`` when the folder cannot be listed or the snapshot
    ///   written; the folder's values are untouched either way.
    public func saveIndex() throws(StorageError) {
        do {
            try Self.saveSnapshot(of: self)
        } catch {
            throw StorageError(
                .io,
                storage: "DiskStorage",
                message: "cannot save the index snapshot of \(root): \(error)",
                underlying: error
            )
        }
    }

    /// How many value folders the last open took from the snapshot, and how many it read file by
    /// file (all of them when there was no snapshot to use).
    package var openedFolders: (fromSnapshot: Int, read: Int) {
        state.withLock { ($0.foldersFromSnapshot, $0.foldersRead) }
    }

    /// Starts a save on Strata's I/O threads when enough changed since the last one (or, with
    /// `regardlessOfChanges`, now).
    func saveIndexIfDue(regardlessOfChanges: Bool = false) {
        guard layout == .flat, options.savesIndexSnapshots else { return }
        let due = state.withLock { state -> Bool in
            let changes = state.cache.changeStamp &- state.savedStamp
            let threshold = regardlessOfChanges ? 0 : UInt64(max(Self.snapshotThreshold, state.cache.count / 8))
            guard !state.isSaving, changes >= threshold else {
                return false
            }
            state.isSaving = true
            return true
        }
        guard due else { return }
        Task(executorPreference: BlockingIOPool.shared) { [self] in
            defer { state.withLock { $0.isSaving = false } }
            do {
                try Self.saveSnapshot(of: self)
            } catch {
                observer?.log(.warning, "DiskStorage could not save its index snapshot", reason: "\(error)", key: nil)
            }
        }
    }

    /// Held while a snapshot is saved: this process names its temporary snapshot file the same
    /// way every time, so two saves (a storage's own and an asked-for one, or two storages on
    /// one folder) take turns.
    private static let savingLock = Lock()

    /// Lists every value folder and writes what it holds, with the index's knowledge of each value
    /// (or, for a file the index does not know, its header), to the snapshot file atomically.
    private static func saveSnapshot(of storage: DiskStorage) throws(SystemCallError) {
        try savingLock.withLock { () throws(SystemCallError) in try saveSnapshotLocked(of: storage) }
    }

    private static func saveSnapshotLocked(of storage: DiskStorage) throws(SystemCallError) {
        guard storage.layout == .flat else { return }
        let root = storage.root
        let saved = Date().timeIntervalSince1970
        let stamp = storage.state.withLock { $0.cache.changeStamp }
        let now = storage.options.clock.now().timeIntervalSince1970
        var folders: [Int: DiskIndexSnapshot.Folder] = [:]
        for (number, folder) in DiskLayout.flat.folders.enumerated() {
            guard let listing = try SystemCalls.listing(of: root + "/" + folder) else { continue }
            let names = listing.entries.filter { !$0.name.hasPrefix(TemporaryFiles.prefix) }
            var files: [DiskIndexSnapshot.File] = []
            files.reserveCapacity(names.count)
            var unknown: [(position: Int, name: String)] = []
            storage.state.withLock { state in
                for (name, inode) in names {
                    let relativePath = String.path(folder, name)
                    var value: DiskIndexSnapshot.Value?
                    if let key = state.owners[relativePath], let slot = state.cache.index[key],
                        let entry = state.cache.slots[slot], entry.value.relativePath == relativePath
                    {
                        value = .init(
                            key: key,
                            size: entry.value.size,
                            touched: entry.value.touched,
                            expiry: entry.expiry
                        )
                    } else if storage.isRecordName(name) {
                        unknown.append((files.count, name))
                    }
                    files.append(DiskIndexSnapshot.File(name: name, inode: inode, value: value))
                }
            }
            // Files the index does not know (another process's, or damaged): their headers say.
            if !unknown.isEmpty, let descriptor = try SystemCalls.openFolder(root + "/" + folder) {
                defer { close(descriptor) }
                for (position, name) in unknown {
                    let relativePath = String.path(folder, name)
                    if case .value(let record)? = try storage.scanHeader(
                        name,
                        in: descriptor,
                        relativePath: relativePath,
                        now: now
                    ) {
                        files[position].value = .init(
                            key: record.key,
                            size: record.size,
                            touched: record.modified,
                            expiry: record.expiry
                        )
                    }
                }
            }
            folders[number] = DiskIndexSnapshot.Folder(
                modified: .init(seconds: listing.modified.seconds, nanoseconds: listing.modified.nanoseconds),
                files: files
            )
        }
        let bytes = DiskIndexSnapshot(saved: saved, folders: folders).encoded()
        try SystemCalls.writeAtomically(
            bytes,
            to: root + "/" + DiskIndexSnapshot.fileName,
            temporaryPath: root + "/" + TemporaryFiles.name(tag: "index"),
            folder: root,
            permissions: mode_t(storage.options.filePermissions),
            durable: false
        )
        storage.state.withLock { $0.savedStamp = stamp }
    }

    /// The folder's snapshot, or `nil` when there is none or it cannot be used (logged).
    func loadSnapshot() -> DiskIndexSnapshot? {
        guard layout == .flat, options.savesIndexSnapshots else { return nil }
        let path = root + "/" + DiskIndexSnapshot.fileName
        do {
            guard let file = try SystemCalls.readFile(path) else { return nil }
            return try DiskIndexSnapshot.decode(file.bytes)
        } catch {
            observer?.log(
                .notice,
                "DiskStorage reads every file instead of its index snapshot",
                reason: "\(error)",
                key: nil,
                metadata: ["folder": "\(root)"]
            )
            return nil
        }
    }

    /// A value folder as opening listed it: its modification time, taken before the listing, and
    /// what it holds, temporary files apart.
    struct FolderListing {
        var modified: DiskIndexSnapshot.Time
        var entries: [(name: String, inode: UInt64)]
        var temporaryFiles: [String]
    }

    /// The folder's snapshot and a listing of each value folder (`nil` for one that does not
    /// exist), or `nil` when there is no snapshot to use. Both are system-call work that does
    /// not depend on the other, so they run on two threads: this one reads the snapshot and
    /// lists the second half of the folders while another thread lists the first half
    /// (``bothAtOnce(_:_:)``).
    func loadSnapshotListingFolders() throws(SystemCallError) -> (DiskIndexSnapshot, [FolderListing?])? {
        guard layout == .flat, options.savesIndexSnapshots,
            SystemCalls.fileExists(root + "/" + DiskIndexSnapshot.fileName)
        else { return nil }
        let folders = DiskLayout.flat.folders
        let half = folders.count / 2
        let (first, (snapshot, second)) = bothAtOnce(
            { Result { () throws(SystemCallError) in try listFolders(folders[..<half]) } },
            { (loadSnapshot(), Result { () throws(SystemCallError) in try listFolders(folders[half...]) }) }
        )
        guard let snapshot else { return nil }
        return (snapshot, try first.get() + second.get())
    }

    private func listFolders(_ folders: ArraySlice<String>) throws(SystemCallError) -> [FolderListing?] {
        var listings: [FolderListing?] = []
        listings.reserveCapacity(folders.count)
        for folder in folders {
            guard let listing = try SystemCalls.listing(of: root + "/" + folder) else {
                listings.append(nil)
                continue
            }
            var entries: [(name: String, inode: UInt64)] = []
            entries.reserveCapacity(listing.entries.count)
            var temporaryFiles: [String] = []
            for entry in listing.entries {
                if entry.name.hasPrefix(TemporaryFiles.prefix) {
                    temporaryFiles.append(entry.name)
                } else {
                    entries.append(entry)
                }
            }
            listings.append(
                FolderListing(
                    modified: DiskIndexSnapshot.Time(
                        seconds: listing.modified.seconds,
                        nanoseconds: listing.modified.nanoseconds
                    ),
                    entries: entries,
                    temporaryFiles: temporaryFiles
                )
            )
        }
        return listings
    }

    /// Passes each value of `snapshot` in a value folder that has not changed since it was saved
    /// (as `listings`, by folder number, found it) to `found` (or, expired, its path to
    /// `expired`), and reads the other folders' files with `scan`.
    func buildIndex(
        from snapshot: DiskIndexSnapshot,
        listings: [FolderListing?],
        now: Double,
        found: (Scanned) -> Void,
        expired: (String) -> Void,
        scan: (String, Int32, String) throws(SystemCallError) -> Void
    ) throws(SystemCallError) {
        var fromSnapshot = 0
        var read = 0
        for (number, folder) in DiskLayout.flat.folders.enumerated() {
            guard let listing = listings[number] else { continue }
            for name in listing.temporaryFiles { removeStaleTemporaryFile(name, in: folder) }
            if snapshot.matches(folder: number, modified: listing.modified, listing: listing.entries),
                let files = snapshot.folders[number]?.files
            {
                fromSnapshot += 1
                for file in files {
                    guard let value = file.value else { continue }
                    let relativePath = String.path(folder, file.name)
                    if value.expiry <= now {
                        expired(relativePath)
                    } else {
                        found(
                            Scanned(
                                key: value.key,
                                relativePath: relativePath,
                                size: value.size,
                                modified: value.touched,
                                expiry: value.expiry
                            )
                        )
                    }
                }
                continue
            }
            read += 1
            guard let descriptor = try SystemCalls.openFolder(root + "/" + folder) else { continue }
            defer { close(descriptor) }
            for (name, _) in listing.entries where isRecordName(name) {
                try scan(.path(folder, name), descriptor, name)
            }
        }
        state.withLock { state in
            state.foldersFromSnapshot = fromSnapshot
            state.foldersRead = read
        }
    }
}
