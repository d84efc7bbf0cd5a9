public import Foundation
public import Logging

extension DiskStorage {
    /// What the storage does with values it cannot keep or read.
    public enum Mode: Sendable, Hashable {
        /// A cache: limits evict the least recently used values, and a damaged file reads as a
        /// miss and is removed.
        case cache
        /// A store of record: a write that would pass a limit throws
        /// ``StorageError/Code/capacityExceeded``, and a damaged file throws
        /// ``StorageError/Code/corrupted``. Nothing is ever dropped silently.
        case store
    }

    /// Where on the system a named folder lives.
    public struct Location: Sendable, Hashable {
        let resolve: Kind

        enum Kind: Hashable {
            case caches, applicationSupport, temporary
            case appGroup(String)
            case url(URL)
        }

        /// The user's caches folder: `$XDG_CACHE_HOME` or `~/.cache` on Linux, `Library/Caches`
        /// on Apple platforms. The system may clear it.
        public static let caches = Location(resolve: .caches)
        /// The user's application data folder: `$XDG_DATA_HOME` or `~/.local/share` on Linux,
        /// `Library/Application Support` on Apple platforms.
        public static let applicationSupport = Location(resolve: .applicationSupport)
        /// The system's temporary folder.
        public static let temporary = Location(resolve: .temporary)
        /// A folder of your choosing.
        public static func url(_ url: URL) -> Location { Location(resolve: .url(url)) }
        /// The shared container of an app group, which an app and its extensions (a widget, a
        /// share extension) all reach: on Apple platforms
        /// `FileManager.containerURL(forSecurityApplicationGroupIdentifier:)`, for a group among
        /// the app's `com.apple.security.application-groups` entitlements; on Linux a folder
        /// named after the group in `$XDG_DATA_HOME` (`~/.local/share`), which one user's
        /// processes share. A container is backed up: set
        /// ``DiskStorage/Options/isExcludedFromBackup`` for a cache kept there.
        ///
        /// Opening a storage in a group the app may not use throws
        /// ``StorageError/Code/invalidConfiguration``.
        public static func appGroup(_ identifier: String) -> Location { Location(resolve: .appGroup(identifier)) }

        /// The folder this location names, found with `attributes` for an app group.
        package func url(attributes: any FolderAttributes = SystemFolderAttributes()) throws(StorageError) -> URL {
            let manager = FileManager.default
            switch resolve {
            case .caches:
                return manager.urls(for: .cachesDirectory, in: .userDomainMask).first
                    ?? manager.temporaryDirectory
            case .applicationSupport:
                return manager.urls(for: .applicationSupportDirectory, in: .userDomainMask).first
                    ?? manager.temporaryDirectory
            case .temporary:
                return manager.temporaryDirectory
            case .appGroup(let identifier):
                guard !identifier.isEmpty, !identifier.contains("/"), identifier != ".", identifier != ".." else {
                    throw StorageError(
                        .invalidConfiguration,
                        storage: "DiskStorage",
                        message: "'\(identifier)' is not an app group identifier, such as group.com.example.app"
                    )
                }
                guard let container = attributes.container(ofAppGroup: identifier) else {
                    throw StorageError(
                        .invalidConfiguration,
                        storage: "DiskStorage",
                        message: "the app may not use the app group '\(identifier)': add it to the "
                            + "com.apple.security.application-groups entitlement of the app and of each extension"
                    )
                }
                return container
            case .url(let url):
                return url
            }
        }
    }

    /// How a ``DiskStorage`` behaves: mode, limits, durability, expiry and file permissions.
    public struct Options: Sendable {
        /// Cache (evict and drop damage) or store (refuse and report damage). Cache by default.
        public var mode: Mode = .cache
        /// The most bytes the folder's value files may take, headers included; `nil` for no limit.
        public var maximumByteCount: Int?
        /// The most values kept; `nil` for no limit.
        public var maximumCount: Int?
        /// How long a value lives when `set` gives it no time of its own; `nil` for forever.
        public var timeToLive: Duration?
        /// Rules that work out each value's lifetime instead of ``timeToLive``: one read from the
        /// value when it is written (``Expiry/init(afterCreate:afterUpdate:afterRead:)`` without
        /// `afterRead`), or an idle time that reads renew (``Expiry/afterAccess(_:)``).
        ///
        /// Lifetimes worked out on writes are kept in each file's header. An idle time is kept in
        /// the file's modification time, which a read moves forward once a sixteenth of the idle
        /// time (or ``recencyResolution``, if shorter) has passed since the last: so a value read
        /// now and then may expire up to that much early, and other processes and a reopened
        /// storage see the same lifetimes. A rule for reads other than an idle time is refused,
        /// since a read would have to rewrite the file. Give this or ``timeToLive``, not both.
        public var expiry: Expiry<String, Data>?
        /// When `true`, every write syncs the file and its folder (and the parent of any folder it
        /// creates) before returning, so an acknowledged write survives power loss; on Apple
        /// platforms with `F_FULLFSYNC`, which flushes the drive's cache. Off by default: writes
        /// are atomic either way.
        public var isDurable = false
        /// The permissions of value files; owner read/write only by default.
        public var filePermissions: UInt16 = 0o600
        /// The permissions of folders; owner only by default.
        public var folderPermissions: UInt16 = 0o700
        /// The data-protection class of the folder and of the files written in it, on Apple
        /// platforms; `nil`, the default, leaves the system's (see ``FileProtection``). Set when
        /// the storage opens its folder and whenever it recreates it; files already in the folder
        /// keep the class they were written with. Linux has no protection classes: there the
        /// option is accepted and does nothing.
        public var fileProtection: FileProtection?
        /// Whether backups skip the folder. On Apple platforms the folder is marked
        /// `isExcludedFromBackup`, which iCloud and device backups honour: set it for a cache that
        /// lives outside `.caches` (App Review rejects apps that back up what they can download
        /// again). On Linux the folder gets a `CACHEDIR.TAG` file, which `tar --exclude-caches`,
        /// BorgBackup and restic honour. Applied when the storage opens its folder and whenever it
        /// recreates it. Off by default.
        public var isExcludedFromBackup = false
        /// The platform calls behind ``fileProtection``, ``isExcludedFromBackup`` and
        /// ``Location/appGroup(_:)``; tests record them.
        package var folderAttributes: any FolderAttributes = SystemFolderAttributes()
        /// Which values are evicted first when a limit is reached (cache mode).
        public var evictionPolicy: EvictionPolicy = .leastRecentlyUsed
        /// The time source for creation and expiry times.
        public var clock: any StorageClock = SystemClock()
        /// How long a read's recency may lag on disk before a read refreshes the file's time;
        /// recency survives a restart to within this interval.
        public var recencyResolution: Duration = .seconds(3600)
        /// Whether the async `value(forKey:)` of a caller on no actor reads a file the kernel
        /// holds in memory on the caller's thread, sparing the two thread switches of a hop to
        /// Strata's I/O threads; `true` by default.
        ///
        /// On Linux the read uses calls that fail rather than wait for the disk (`openat2` with
        /// `RESOLVE_CACHED`, `preadv2` with `RWF_NOWAIT`), for files up to 256 KiB whose key is
        /// indexed; anything else still goes to the I/O threads (so does every read of a file system
        /// that cannot read without waiting, such as tmpfs), and a caller on an actor always does.
        /// A 1 KiB async read then costs about what the raw `open`, `fstat`, `read` and `close` of
        /// the file cost (0.97 to 1.07 times, `disk.get.1k.async` in "Which thread runs what")
        /// instead of about 5 times.
        /// Such a read never blocks, but its work (the copy and the checksum, about 20 µs at most)
        /// runs on the cooperative pool's thread that called, without suspending the caller as a
        /// hop does; a thread that has answered reads in place for a millisecond yields, so a loop
        /// of them lets other tasks and timers run. Set it to `false` to send every read to the I/O
        /// threads, which keeps the cooperative threads for your own tasks at the price of the hop.
        public var readsInPlace = true
        /// Where to log what a user must hear about: a damaged file dropped in cache mode (at
        /// `.warning`, with the key only at `.debug`), damaged files found when opening, and an
        /// eviction storm (more than 1,000 evictions within 10 seconds, once per window). `nil`,
        /// the default, logs nothing.
        public var logger: Logger?
        /// Where to report hits, misses, evictions, sizes and latencies (see ``StorageMetrics``);
        /// `nil`, the default, reports nothing.
        public var metrics: StorageMetrics?
        /// Whether the storage keeps a snapshot of its index at the root of the folder
        /// (`strata-index.bin`, see `saveIndex()`), so that opening a large folder
        /// need not read every file's header. On by default; a snapshot never decides what a read
        /// returns.
        public var savesIndexSnapshots = true
        /// Replaces the key hash, for tests of hash collisions. Returns at least 16 bytes.
        package var keyDigest: (@Sendable (String) -> [UInt8])?

        /// Creates the default options: an unbounded cache, not durable, owner-only files.
        public init() {}

        /// Creates options with the given limits and mode.
        public init(
            mode: Mode = .cache,
            maximumByteCount: Int? = nil,
            maximumCount: Int? = nil,
            timeToLive: Duration? = nil,
            isDurable: Bool = false,
            logger: Logger? = nil,
            metrics: StorageMetrics? = nil
        ) {
            self.logger = logger
            self.metrics = metrics
            self.mode = mode
            self.maximumByteCount = maximumByteCount
            self.maximumCount = maximumCount
            self.timeToLive = timeToLive
            self.isDurable = isDurable
        }
    }

    /// The result of ``DiskStorage/verify(progress:)``: every value file checked against its checksum.
    public struct VerificationReport: Sendable, Hashable {
        /// One damaged file: its path and what is wrong with it.
        public struct DamagedFile: Sendable, Hashable {
            /// The file's path.
            public var path: String
            /// What is wrong, for a person.
            public var reason: String
        }

        /// How many value files were checked.
        public var checkedFiles = 0
        /// The files that failed.
        public var damagedFiles: [DamagedFile] = []

        /// Whether every file was sound.
        public var isSound: Bool { damagedFiles.isEmpty }
    }
}
