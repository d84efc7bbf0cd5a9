package import Foundation
import Logging
import _StrataInternals

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// How a disk folder spreads its value files over folders; its manifest names it.
package enum DiskLayout: String, Sendable {
    /// Manifest version 1: `d/ig/<digest>`, 16 folders of 256, each made when a value first
    /// needed it. A `mkdir` on ext4 costs 80 to 300 µs (it places each new folder in a block group
    /// of its own), so a new store paid for up to 4,112 of them during its first writes, and
    /// opening a folder listed as many.
    case nested = "sha256-128/16x256"
    /// Manifest version 2: `di/<digest>`, 256 folders, made when the folder is created. A million
    /// values are some 4,000 a folder, which ext4's and APFS's hashed directories look up in
    /// constant time.
    case flat = "sha256-128/256"

    /// The folders that hold value files, relative to the root.
    var folders: [String] {
        switch self {
        case .nested: Self.nestedFolders
        case .flat: Self.flatFolders
        }
    }

    private static let flatFolders = (0..<256).map(twoHexDigits)
    private static let nestedFolders = (0..<16).flatMap { first in
        (0..<256).map { String(first, radix: 16) + "/" + twoHexDigits($0) }
    }

    private static func twoHexDigits(_ value: Int) -> String {
        value < 16 ? "0" + String(value, radix: 16) : String(value, radix: 16)
    }
}

/// The manifest at the root of a disk folder, a ``FolderManifest`` of format `strata.disk`.
/// `package`, like ``DiskRecordHeader``'s parsing, for the `StrataFuzz` target.
package enum DiskManifest {
    static let kind = FolderManifest.Kind(
        fileName: DiskStorage.manifestName,
        format: "strata.disk",
        newestVersion: 2,
        storage: "DiskStorage"
    )

    /// The manifest of a new folder.
    package static let current = of(.flat)

    /// The manifest of a folder of `layout`: version 2 for the flat layout, 1 for the nested one.
    static func of(_ layout: DiskLayout) -> FolderManifest {
        FolderManifest(format: kind.format, version: layout == .flat ? 2 : 1, layout: layout.rawValue)
    }

    /// The layout a manifest's version names: version 1 wrote only the nested layout; from
    /// version 2 the name must be the flat one.
    static func layout(of manifest: FolderManifest) throws(FolderManifestError) -> DiskLayout {
        if manifest.version == 1 { return .nested }
        guard manifest.layout == DiskLayout.flat.rawValue else {
            throw .unsupported("layout '\(manifest.layout)'")
        }
        return .flat
    }

    /// Decodes a manifest, or says why the bytes are not one Strata can open.
    package static func decode(_ data: Data) throws(FolderManifestError) -> FolderManifest {
        let manifest = try kind.decode(data)
        _ = try layout(of: manifest)
        return manifest
    }
}

extension DiskStorage {
    /// A record file found while opening the folder.
    struct Scanned {
        var key: String
        var relativePath: String
        var size: Int
        var modified: Double
        var expiry: Double
    }

    private func isHex(_ name: Substring) -> Bool {
        name.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }

    /// Whether `name` names a record file: 32 hex digits, optionally `-` and a probe number.
    func isRecordName(_ name: String) -> Bool {
        // Bytes, not characters: this runs for every file when a folder is opened.
        let utf8 = name.utf8
        guard utf8.count >= 32 else { return false }
        let digest = utf8.prefix(32)
        guard digest.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }) else { return false }
        let rest = utf8.dropFirst(32)
        guard let dash = rest.first else { return true }
        return dash == UInt8(ascii: "-") && rest.count > 1 && rest.dropFirst().allSatisfy { (48...57).contains($0) }
    }

    /// Calls `body` with the relative path of every record file in the folder, the descriptor of
    /// the open shard folder holding it, and its name there.
    ///
    /// With `removingStaleTemporaryFiles`, a temporary file a dead process left in a shard folder
    /// is removed on the way.
    func forEachRecordFile(
        removingStaleTemporaryFiles: Bool = true,
        _ body: (_ relativePath: String, _ folder: Int32, _ name: String) throws(SystemCallError) -> Void
    ) throws(SystemCallError) {
        func visit(_ folder: String) throws(SystemCallError) {
            guard let names = try SystemCalls.contents(of: root + "/" + folder),
                let descriptor = try SystemCalls.openFolder(root + "/" + folder)
            else { return }
            defer { close(descriptor) }
            for file in names {
                if file.hasPrefix(TemporaryFiles.prefix) {
                    if removingStaleTemporaryFiles { removeStaleTemporaryFile(file, in: folder) }
                } else if isRecordName(file) {
                    try body(.path(folder, file), descriptor, file)
                }
            }
        }
        switch layout {
        case .nested:
            for first in try SystemCalls.contents(of: root) ?? [] where first.utf8.count == 1 && isHex(first[...]) {
                for second in try SystemCalls.contents(of: root + "/" + first) ?? []
                where second.utf8.count == 2 && isHex(second[...]) {
                    try visit(first + "/" + second)
                }
            }
        case .flat:
            for folder in try SystemCalls.contents(of: root) ?? [] where folder.utf8.count == 2 && isHex(folder[...]) {
                try visit(folder)
            }
        }
    }

    /// Removes a temporary file that `folder` (relative) holds and a process that no longer runs
    /// left (one that crashed mid-write); another live process's file is left alone.
    func removeStaleTemporaryFile(_ name: String, in folder: String) {
        TemporaryFiles.removeIfAbandoned(name, in: absolutePath(folder))
    }

    /// Writes the manifest of this storage's layout, for a folder removed behind its back.
    func writeManifest() throws(SystemCallError) {
        try DiskManifest.kind.write(
            DiskManifest.of(layout),
            root: root,
            permissions: options.filePermissions,
            durable: options.isDurable
        )
    }

    /// Checks the manifest at `root` and returns the layout it names (see ``FolderManifest`` for
    /// the rules); in a new or empty folder, makes the value folders of the current layout
    /// before the manifest is written, so a folder with a manifest has all its value folders.
    /// Also removes the index snapshots at the root that processes which no longer run left
    /// (one killed between writing the file and renaming it).
    static func openManifest(root: String, options: Options) throws(StorageError) -> DiskLayout {
        let valueFolders = Set(DiskLayout.flat.folders)
        var layout = DiskLayout.flat
        _ = try DiskManifest.kind.open(
            root: root,
            permissions: (options.filePermissions, options.folderPermissions),
            durable: options.isDurable,
            ownsEntry: { valueFolders.contains($0) },
            check: { manifest throws(FolderManifestError) in layout = try DiskManifest.layout(of: manifest) },
            create: { () throws(SystemCallError) in
                for folder in DiskLayout.flat.folders {
                    try SystemCalls.makeFolder(root + "/" + folder, permissions: mode_t(options.folderPermissions))
                }
                return DiskManifest.current
            }
        )
        for name in (try? SystemCalls.contents(of: root)) ?? [] {
            TemporaryFiles.removeIfAbandoned(name, in: root, tag: "index")
        }
        return layout
    }

    /// What reading one file's header when opening found.
    enum HeaderScan {
        case value(Scanned)
        case expired
        case damaged(DiskRecordError?)
    }

    /// Reads the header of the file `name` in the open folder `folder` (at `relativePath`), as
    /// opening does; `nil` when the file is gone.
    func scanHeader(
        _ name: String,
        in folder: Int32,
        relativePath: String,
        now: Double
    ) throws(SystemCallError) -> HeaderScan? {
        // Enough for the header of a key of up to 456 bytes; longer keys take a second read.
        let read: FileBytes?
        do throws(SystemCallError) {
            read = try SystemCalls.readFile(name, in: folder, limit: 512)
        } catch {
            // A directory (or FIFO) where a record should be is damage, not a reason to
            // refuse the whole folder; it is left in place for a person to look at.
            guard error.isNotARegularFile else { throw error }
            return .damaged(nil)
        }
        guard let prefix = read else { return nil }
        do throws(DiskRecordError) {
            var header: DiskRecordHeader
            let needed = try DiskRecordHeader.requiredSize(forPrefix: prefix.bytes)
            if needed > prefix.count {
                guard let longer = try? SystemCalls.readFile(name, in: folder, limit: needed) else {
                    return .damaged(.truncated)
                }
                header = try DiskRecordHeader.decode(longer.bytes)
            } else {
                header = try DiskRecordHeader.decode(prefix.bytes)
            }
            guard prefix.fileSize == header.size + header.payloadLength else { throw .truncated }
            let expiry = liveUntil(header, modified: prefix.modified)
            if expiry <= now { return .expired }
            return .value(
                Scanned(
                    key: header.key,
                    relativePath: relativePath,
                    size: prefix.fileSize,
                    modified: prefix.modified,
                    expiry: expiry
                )
            )
        } catch {
            return .damaged(error)
        }
    }

    func buildIndex() throws(StorageError) {
        let now = options.clock.now().timeIntervalSince1970
        var scanned: [Scanned] = []
        var damaged: UInt64 = 0
        // Expired files, and damaged ones in cache mode: removed once the index is built, so
        // that removing them can keep collision chains contiguous.
        var dropped: [String] = []
        func scan(_ relativePath: String, _ folder: Int32, _ name: String) throws(SystemCallError) {
            switch try scanHeader(name, in: folder, relativePath: relativePath, now: now) {
            case .value(let record)?: scanned.append(record)
            case .expired?: dropped.append(relativePath)
            case .damaged(let error)?:
                damaged += 1
                // A cache drops damage, but leaves a newer format's file (or a folder) alone.
                if let error, options.mode == .cache {
                    if case .newerFormat = error {} else { dropped.append(relativePath) }
                }
            case nil: break
            }
        }
        do {
            if let (snapshot, listings) = try loadSnapshotListingFolders() {
                try buildIndex(
                    from: snapshot,
                    listings: listings,
                    now: now,
                    found: { scanned.append($0) },
                    expired: { dropped.append($0) },
                    scan: scan
                )
            } else {
                try forEachRecordFile(scan)
                let folders = layout.folders.count
                state.withLock { state in
                    state.foldersFromSnapshot = 0
                    state.foldersRead = folders
                }
            }
        } catch {
            throw StorageError(.io, storage: "DiskStorage", message: "cannot read \(root): \(error)", underlying: error)
        }
        var removed = Removed()
        state.withLock { state in
            state.statistics.damagedFiles = damaged
            // A value larger than the byte limit is not indexed, as `set` would refuse it.
            let maximumCost = state.cache.maximumCost
            let records = scanned
            // Three jobs for a large folder, independent until the end: on another thread, the
            // owner of each file's path and the order of recency; on this one, the index, loaded
            // in the records' own order (reading them one after another) and told its recency
            // afterwards.
            let ((owners, order), (slotOf, hashCost, replaced)) = bothAtOnce(
                {
                    var owners: [String: String] = [:]
                    owners.reserveCapacity(records.count)
                    for record in records where record.size <= maximumCost {
                        owners[record.relativePath] = record.key
                    }
                    // Oldest first, so the most recently used end up most recent in the index.
                    // (Sorting times with positions rather than the records themselves spares
                    // moving, retaining and releasing their strings at every comparison.)
                    let order = records.indices.map { (records[$0].modified, $0) }.sorted { $0.0 < $1.0 }.map(\.1)
                    return (owners, order)
                },
                {
                    state.cache.reserveCapacity(records.count)
                    // The slot of each record's entry (-1 for none); the record, hash and cost of
                    // each slot.
                    var slotOf = [Int](repeating: -1, count: records.count)
                    var recordIn: [Int] = []
                    var hashCost: [(hash: Int, cost: Int)] = []
                    recordIn.reserveCapacity(records.count)
                    hashCost.reserveCapacity(records.count)
                    var replaced: [String] = []
                    for position in records.indices {
                        let record = records[position]
                        guard record.size <= maximumCost else { continue }
                        let entry = Entry(
                            relativePath: record.relativePath,
                            size: record.size,
                            touched: record.modified
                        )
                        // The same key in two files (a collision chain interrupted by a crash):
                        // the newer stays, the later of two as old.
                        let (slot, hash, loser) = state.cache.loadUnqueued(
                            entry,
                            forKey: record.key,
                            cost: record.size,
                            expiry: record.expiry,
                            replacing: { $0.touched <= record.modified }
                        )
                        if let loser { replaced.append(loser.relativePath) }
                        guard let slot else { continue }
                        if slot == recordIn.count {
                            recordIn.append(position)
                            hashCost.append((hash, record.size))
                        } else {
                            slotOf[recordIn[slot]] = -1
                            recordIn[slot] = position
                            hashCost[slot] = (hash, record.size)
                        }
                        slotOf[position] = slot
                    }
                    return (slotOf, hashCost, replaced)
                }
            )
            for position in order where slotOf[position] >= 0 {
                let slot = slotOf[position]
                state.cache.enqueueLoaded(slot: slot, hash: hashCost[slot].hash, cost: hashCost[slot].cost)
            }
            state.owners = owners
            for path in replaced { state.owners[path] = nil }
            dropped += replaced
            // Over a limit (one lowered since the last run): the least recently used go.
            state.cache.evict(toCount: state.cache.maximumCount, toCost: state.cache.maximumCost, removed: &removed)
            state.cache.statistics = StorageStatistics()
            // What was read is what the folder holds: changes count from here.
            state.savedStamp = state.cache.changeStamp
        }
        if damaged > 0 {
            observer?.log(
                .warning,
                "DiskStorage found damaged files when opening its folder",
                reason: options.mode == .cache ? "removed as misses (cache mode)" : "left in place (store mode)",
                key: nil,
                metadata: ["damaged_files": "\(damaged)", "folder": "\(root)"]
            )
        }
        // Last probes first, so no file about to be dropped is moved into another's gap.
        for path in dropped.sorted(by: { probe(of: $0) > probe(of: $1) }) {
            removeDroppedFile(relativePath: path)
        }
        evict(removed)
    }

    /// Reads every value file in the folder and checks it against its checksums.
    ///
    /// Nothing is changed, in either mode: use it to find damage before deciding what to do.
    ///
    /// - Parameter progress: Called after each file with how many have been checked, for a tool
    ///   that shows progress; `nil` by default.
    /// - Throws: ``StorageError/Code/io`` when the folder cannot be listed.
    public func verify(progress: ((Int) -> Void)? = nil) throws(StorageError) -> VerificationReport {
        var report = VerificationReport()
        defer { progress?(report.checkedFiles) }
        do throws(SystemCallError) {
            try forEachRecordFile(removingStaleTemporaryFiles: false) { (relativePath, _, _) throws(SystemCallError) in
                let path = absolutePath(relativePath)
                let read: FileBytes?
                do throws(SystemCallError) {
                    read = try SystemCalls.readFile(path)
                } catch {
                    guard error.isNotARegularFile else { throw error }
                    report.checkedFiles += 1
                    report.damagedFiles.append(.init(path: path, reason: "\(error)"))
                    return
                }
                guard let file = read else { return }
                report.checkedFiles += 1
                progress?(report.checkedFiles)
                do throws(DiskRecordError) {
                    _ = try DiskRecordHeader.decodeRecord(file.bytes)
                } catch {
                    report.damagedFiles.append(.init(path: path, reason: error.description))
                }
            }
        } catch {
            throw StorageError(
                .io,
                storage: "DiskStorage",
                message: "cannot verify \(root): \(error)",
                underlying: error
            )
        }
        return report
    }
}
