public import Foundation
public import Strata
import Synchronization
import _StrataInternals

/// A folder of JSON files in SHELF's layout: the embedded default backend of ``ObjectStore``.
///
/// Each object is one file, `<root>/<2 hex>/<2 hex>/<key>.json`, where `key` is the object's ID
/// as ``ObjectKeyCoding`` writes it. A UUID ID is filed under its own first four digits, as SHELF
/// does (`62/73/6273674B-F271-4521-9B74-F5656A1F815D.json`); any other key under the first four
/// hex digits of its SHA-256, so keys spread evenly. Attachments live beside their object in
/// `<key>.attachments/`. A file holds the object's JSON and nothing else, so a person can read it
/// and a tool can edit it.
///
/// The root holds `strata-objects.json`, the folder's configuration (format, version, layout,
/// compression). It opens by the rules of every folder Strata keeps: a non-empty folder without
/// one fails with `StorageError.Code.invalidConfiguration`, a damaged one with
/// `StorageError.Code.corrupted`, a newer version or unknown option with
/// `StorageError.Code.unsupported`; none touches the folder.
///
/// Keys and attachment names are written into file names with every byte other than `a`-`z`,
/// `0`-`9`, `-`, `_` and an inner `.` escaped as `%XX` (upper-case letters too, so two keys that
/// differ only in case never share a file on a case-insensitive file system). A key or name whose
/// escaped form is longer than 240 bytes is refused with `StorageError.Code.invalidKey`; no key
/// reaches outside the folder. Keys and names are stored in Unicode's NFC form, so IDs that Swift
/// considers equal (`"e\u{301}"` and `"\u{e9}"`) name one object, as they do in every Strata
/// storage. A record or attachment that an earlier version filed under another form is still
/// read, and the next write moves it to the stored form.
///
/// Writes go to a temporary file in the same folder and are renamed into place, so a reader sees
/// the old object or the new one, never a mix; with ``Options/isDurable`` the file and its folder
/// are synced first. Any task may use a folder; several processes may share one, each reading
/// whole objects, but their read-modify-writes are not coordinated (see
/// ``ObjectStore/update(withID:_:)``).
public final class ObjectFolder: ObjectStoreBackend {
    /// How a folder is written.
    public struct Options: Sendable {
        /// Whether each write is synced to the device before it returns (slower; survives power
        /// loss). Off by default.
        public var isDurable: Bool
        /// The permissions of new files.
        public var filePermissions: UInt16
        /// The permissions of new folders.
        public var folderPermissions: UInt16
        /// Whether the async `record(forKey:)`, called from no actor (a server's
        /// request handler, say), reads a record the kernel already holds in memory on the
        /// caller's thread instead of on Strata's I/O threads. On by default.
        ///
        /// The read is made only with calls that fail rather than wait for the disk (Linux's
        /// `openat2` with `RESOLVE_CACHED` and `preadv2` with `RWF_NOWAIT`), for records up to
        /// 256 KiB; anything else (a record the disk must be read for, a missing one, a caller on
        /// an actor, another platform) goes to the I/O threads as before. It spares the hop there
        /// and back, which costs more than reading a small record: on a 2-core Linux virtual
        /// machine, `strata-bench`'s `objects.fetch` (fetches from no actor) went from 2.8-2.9
        /// times a raw read and JSON decoding to 1.21-1.25. A loop of such reads yields its
        /// thread every millisecond.
        public var readsInPlace: Bool
        /// The data-protection class of the folder and of the objects written in it, on Apple
        /// platforms; `nil`, the default, leaves the system's. As
        /// `DiskStorage.Options.fileProtection`: set when the folder is opened and whenever it is
        /// recreated, and accepted without effect on Linux.
        public var fileProtection: FileProtection?
        /// Whether backups skip the folder: `isExcludedFromBackup` on Apple platforms, a
        /// `CACHEDIR.TAG` file on Linux, as `DiskStorage.Options.isExcludedFromBackup`. Off by
        /// default: an object folder usually holds data that exists nowhere else.
        public var isExcludedFromBackup: Bool
        /// The platform calls behind the two options above and `.appGroup`; tests record them.
        package var folderAttributes: any FolderAttributes = SystemFolderAttributes()

        /// Creates options.
        public init(
            isDurable: Bool = false,
            filePermissions: UInt16 = 0o600,
            folderPermissions: UInt16 = 0o700,
            readsInPlace: Bool = true,
            fileProtection: FileProtection? = nil,
            isExcludedFromBackup: Bool = false
        ) {
            self.isDurable = isDurable
            self.filePermissions = filePermissions
            self.folderPermissions = folderPermissions
            self.readsInPlace = readsInPlace
            self.fileProtection = fileProtection
            self.isExcludedFromBackup = isExcludedFromBackup
        }
    }

    /// The configuration file's name at the root.
    public static let configurationFileName = "strata-objects.json"
    /// The layout version this code writes and reads.
    public static let formatVersion = 1

    /// The root folder.
    public let url: URL
    /// How the folder is written.
    public let options: Options
    /// The root folder's path, for messages.
    public var name: String { root }

    let root: String
    /// How many records the async `record(forKey:)` read on its caller's thread.
    private let inPlaceReads = Atomic<Int>(0)

    /// Opens (creating when needed) the folder at `url`.
    ///
    /// - Throws: `StorageError.Code.invalidConfiguration` when the folder holds files but no
    ///   configuration, or another program's; `StorageError.Code.corrupted` when the
    ///   configuration is damaged; `StorageError.Code.unsupported` when it is newer or asks for
    ///   something this version cannot do; `StorageError.Code.io` when the folder cannot be
    ///   created. Nothing in the folder changes.
    public init(url: URL, options: Options = Options()) throws(StorageError) {
        self.url = url.standardizedFileURL
        self.options = options
        root = self.url.path
        try openConfiguration()
    }

    /// Opens (creating when needed) the folder `name` in a standard location, such as
    /// `ObjectFolder(folder: "messages", in: .applicationSupport)`.
    public convenience init(
        folder name: String,
        in location: DiskStorage.Location,
        options: Options = Options()
    ) throws(StorageError) {
        guard !name.isEmpty, !name.contains("/"), name != ".", name != ".." else {
            throw StorageError(
                .invalidConfiguration,
                storage: "ObjectFolder",
                message: "'\(name)' is not a folder name: use a single path component, or init(url:)"
            )
        }
        try self.init(
            url: location.url(attributes: options.folderAttributes).appendingPathComponent(name, isDirectory: true),
            options: options
        )
    }

    // MARK: - Records

    public func record(forKey key: String) throws(StorageError) -> Data? {
        for spelling in Self.spellings(of: key) {
            if let data = try read(paths(spelled: spelling).file, key: key) { return data }
        }
        return nil
    }

    @discardableResult
    public func setRecord(_ record: Data, forKey key: String) throws(StorageError) -> Bool {
        let spellings = Self.spellings(of: key)
        let paths = try paths(spelled: spellings[0])
        try adoptEarlierSpellings(spellings.dropFirst(), of: key, into: paths)
        let existed = SystemCalls.fileExists(paths.file)
        try write(record, to: paths.file, in: paths.folder, key: key)
        return existed
    }

    @discardableResult
    public func removeRecord(forKey key: String) throws(StorageError) -> Bool {
        var removed = false
        for spelling in Self.spellings(of: key) {
            let paths = try paths(spelled: spelling)
            do {
                removed = try SystemCalls.remove(paths.file) || removed
            } catch {
                throw ioError(error, key: key, doing: "remove")
            }
            try removeFolder(paths.attachments, key: key)
        }
        return removed
    }

    public func keys() throws(StorageError) -> [String] {
        var keys: [String] = []
        try forEachRecordFile { key, _ in keys.append(key) }
        return keys
    }

    public func records() throws(StorageError) -> [ObjectRecord] {
        var records: [ObjectRecord] = []
        try forEachRecordFile { key, path in
            do throws(StorageError) {
                if let data = try read(path, key: key) {
                    records.append(ObjectRecord(key: key, data: .success(data)))
                }
            } catch {
                records.append(ObjectRecord(key: key, data: .failure(error)))
            }
        }
        return records
    }

    public func location(forKey key: String) -> String {
        (try? paths(forKey: key).file) ?? "\(root)/<invalid key>"
    }

    // MARK: - Attachments

    public func attachment(named name: String, forKey key: String) throws(StorageError) -> Data? {
        for spelling in Self.spellings(of: key) {
            let folder = try paths(spelled: spelling).attachments
            for nameSpelling in Self.spellings(of: name) {
                if let data = try read(attachmentPath(nameSpelling, in: folder), key: key) { return data }
            }
        }
        return nil
    }

    public func setAttachment(_ data: Data, named name: String, forKey key: String) throws(StorageError) {
        let spellings = Self.spellings(of: key)
        let paths = try paths(spelled: spellings[0])
        try adoptEarlierSpellings(spellings.dropFirst(), of: key, into: paths)
        let names = Self.spellings(of: name)
        try write(data, to: try attachmentPath(names[0], in: paths.attachments), in: paths.attachments, key: key)
        for earlier in names.dropFirst() {
            try removeAttachmentFile(try attachmentPath(earlier, in: paths.attachments), name: name, key: key)
        }
    }

    public func removeAttachment(named name: String, forKey key: String) throws(StorageError) {
        for spelling in Self.spellings(of: key) {
            let folder = try paths(spelled: spelling).attachments
            for nameSpelling in Self.spellings(of: name) {
                try removeAttachmentFile(try attachmentPath(nameSpelling, in: folder), name: name, key: key)
            }
        }
    }

    public func attachmentNames(forKey key: String) throws(StorageError) -> [String] {
        var names: [String] = []
        var seen: Set<String> = []
        for spelling in Self.spellings(of: key) {
            let folder = try paths(spelled: spelling).attachments
            let files: [String]?
            do {
                files = try SystemCalls.contents(of: folder)
            } catch {
                throw ioError(error, key: key, doing: "list the attachments of")
            }
            for file in files ?? [] where !file.hasPrefix(".") {
                // A name an earlier version stored in another spelling is listed in the stored one.
                guard let name = Self.unescape(file)?.storedSpelling, seen.insert(name).inserted else { continue }
                names.append(name)
            }
        }
        return names
    }

    private func attachmentPath(_ name: String, in folder: String) throws(StorageError) -> String {
        "\(folder)/\(try Self.fileName(for: name, what: "attachment name"))"
    }

    private func removeAttachmentFile(_ path: String, name: String, key: String) throws(StorageError) {
        do {
            try SystemCalls.remove(path)
        } catch {
            throw ioError(error, key: key, doing: "remove the attachment '\(name)' of")
        }
    }

    // MARK: - Spellings

    /// The spellings of a key or attachment name (see `String.storedSpellings`), without those
    /// too long for a file name, which an earlier version refused too.
    static func spellings(of text: String) -> [String] {
        let spellings = text.storedSpellings
        guard spellings.count > 1 else { return spellings }
        return [spellings[0]] + spellings.dropFirst().filter { (try? fileName(for: $0, what: "key")) != nil }
    }

    /// Moves what an earlier version filed under `earlierSpellings` of `key` to the stored
    /// spelling's `paths`, before a write changes it: the record, unless the stored spelling has one (which is
    /// then the newer, and the other is removed), and each attachment likewise, under its stored
    /// name.
    private func adoptEarlierSpellings(
        _ earlierSpellings: ArraySlice<String>,
        of key: String,
        into paths: Paths
    ) throws(StorageError) {
        for spelling in earlierSpellings {
            let earlier = try self.paths(spelled: spelling)
            let attachments: [String]?
            do throws(SystemCallError) {
                if SystemCalls.fileExists(earlier.file) {
                    if SystemCalls.fileExists(paths.file) {
                        try SystemCalls.remove(earlier.file)
                    } else {
                        try makeFolders(paths.folder)
                        try Self.moveIfPresent(earlier.file, to: paths.file)
                    }
                }
                attachments = try SystemCalls.contents(of: earlier.attachments)
            } catch {
                throw ioError(error, key: key, doing: "move an earlier spelling of")
            }
            guard let attachments else { continue }
            for file in attachments {
                let source = "\(earlier.attachments)/\(file)"
                // Under the name's stored spelling, or as it was if that one is too long.
                let name = Self.unescape(file)?.storedSpelling
                let target =
                    name.flatMap { try? attachmentPath($0, in: paths.attachments) } ?? "\(paths.attachments)/\(file)"
                do throws(SystemCallError) {
                    guard !file.hasPrefix("."), name != nil else {
                        // A temporary file another write abandoned.
                        try SystemCalls.remove(source)
                        continue
                    }
                    if SystemCalls.fileExists(target) {
                        try SystemCalls.remove(source)
                    } else {
                        try makeFolders(paths.attachments)
                        try Self.moveIfPresent(source, to: target)
                    }
                } catch {
                    throw ioError(error, key: key, doing: "move an earlier spelling of the attachments of")
                }
            }
            try removeFolder(earlier.attachments, key: key)
        }
    }

    /// Renames a file; one that is gone already (another write of the key moved it first) is not
    /// an error.
    private static func moveIfPresent(_ source: String, to destination: String) throws(SystemCallError) {
        do {
            try SystemCalls.move(source, to: destination)
        } catch {
            if !error.isNotFound { throw error }
        }
    }

    private func makeFolders(_ path: String) throws(SystemCallError) {
        try SystemCalls.makeFolders(path, permissions: mode_t(options.folderPermissions), durable: options.isDurable)
    }

    // MARK: - Files

    /// The largest record the async `record(forKey:)` reads on its caller's thread.
    static let largestReadInPlace = 256 * 1024

    /// The record for `key` when it can be read without waiting for the disk: the file under the
    /// key's stored spelling, its folders in the kernel's lookup cache and its bytes in the page
    /// cache, at most ``largestReadInPlace`` bytes. `nil` otherwise; the caller then reads on
    /// Strata's I/O threads, which also deal with bad keys, missing files, earlier spellings and
    /// errors.
    func recordInPlace(forKey key: String) -> Data? {
        guard options.readsInPlace, let path = try? paths(forKey: key).file,
            let data = SystemCalls.readDataIfCached(path, limit: Self.largestReadInPlace)
        else { return nil }
        inPlaceReads.add(1, ordering: .relaxed)
        return data
    }

    /// How many records the async `record(forKey:)` read on its caller's thread.
    package var readsInPlace: Int { inPlaceReads.load(ordering: .relaxed) }

    private func read(_ path: String, key: String) throws(StorageError) -> Data? {
        do {
            return try SystemCalls.readData(path)
        } catch {
            throw ioError(error, key: key, doing: "read")
        }
    }

    private static let temporaryCounter = LockedState(UInt64(0))

    private func write(_ data: Data, to path: String, in folder: String, key: String) throws(StorageError) {
        let number = Self.temporaryCounter.withLock { counter in
            counter &+= 1
            return counter
        }
        let temporaryPath = "\(folder)/\(TemporaryFiles.name(number))"
        for attempt in 0..<2 {
            do throws(SystemCallError) {
                try SystemCalls.writeAtomically(
                    data,
                    to: path,
                    temporaryPath: temporaryPath,
                    folder: folder,
                    permissions: mode_t(options.filePermissions),
                    durable: options.isDurable
                )
                return
            } catch {
                // The shard folder does not exist yet (or was removed): make it and try once more.
                if attempt == 0, error.isNotFound {
                    do {
                        let rootWasRemoved = !SystemCalls.fileExists(root)
                        try SystemCalls.makeFolders(
                            folder,
                            permissions: mode_t(options.folderPermissions),
                            durable: options.isDurable
                        )
                        // A root made anew takes the protection and backup exclusion again.
                        if rootWasRemoved { try applyFolderAttributes() }
                    } catch {
                        throw ioError(error, key: key, doing: "create the folder for")
                    }
                    continue
                }
                throw ioError(error, key: key, doing: "write")
            }
        }
    }

    private func removeFolder(_ path: String, key: String) throws(StorageError) {
        do throws(SystemCallError) {
            guard let names = try SystemCalls.contents(of: path) else { return }
            for name in names { try SystemCalls.remove("\(path)/\(name)") }
            try SystemCalls.removeFolder(path)
        } catch {
            throw ioError(error, key: key, doing: "remove the attachments of")
        }
    }

    private func ioError(_ error: SystemCallError, key: String, doing action: String) -> StorageError {
        StorageError(
            .io,
            key: key,
            storage: "ObjectFolder",
            message: "could not \(action) the object: \(error)",
            underlying: error
        )
    }

    // MARK: - Configuration

    private static let manifestKind = FolderManifest.Kind(
        fileName: configurationFileName,
        format: "strata-objects",
        newestVersion: formatVersion,
        storage: "ObjectFolder"
    )

    /// Opens the folder by the rules every Strata folder follows (see `FolderManifest`); this
    /// version reads layout `shelf`, uncompressed.
    private func openConfiguration() throws(StorageError) {
        _ = try Self.manifestKind.open(
            root: root,
            permissions: (options.filePermissions, options.folderPermissions),
            durable: options.isDurable,
            check: { manifest throws(FolderManifestError) in
                guard manifest.layout == "shelf" else { throw .unsupported("layout '\(manifest.layout)'") }
                guard let compression = manifest.compression else { throw .unreadable }
                guard compression == "none" else { throw .unsupported("compression '\(compression)'") }
            },
            create: {
                FolderManifest(
                    format: "strata-objects",
                    version: Self.formatVersion,
                    layout: "shelf",
                    compression: "none"
                )
            }
        )
        do {
            try applyFolderAttributes()
        } catch {
            throw StorageError(
                .io,
                storage: "ObjectFolder",
                message: "cannot protect \(root): \(error)",
                underlying: error
            )
        }
    }

    /// Gives the root the protection class and backup exclusion of ``Options``, if any.
    private func applyFolderAttributes() throws(SystemCallError) {
        try options.folderAttributes.apply(
            protection: options.fileProtection,
            excludedFromBackup: options.isExcludedFromBackup,
            toFolder: root
        )
    }
}
