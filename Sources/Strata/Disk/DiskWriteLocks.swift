#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The lock a folder's writers take across processes, one per stripe of keys: `flock(2)` on the
/// stripe's file in the folder's `strata-disk.locks` folder, opened for the write and closed
/// after it.
///
/// A `DiskStorage` takes its stripe's in-process lock first (threads of one storage), then this
/// one (other storages of the folder, in this process or another), so an update's
/// compare-and-write, a `set`'s rename and a removal are one step for every writer of the folder.
/// `flock` locks belong to the open file description, not to the process, so two storages of one
/// folder in one process exclude each other, and closing the descriptor drops only its own lock.
/// No descriptor stays open between writes: a folder's file system can still be remounted
/// read-only, and an app's descriptor limit is not spent on locks.
///
/// `open`, `flock` and `close` have the same meaning on Linux and on Apple's systems (the BSD
/// `flock(2)` Darwin documents: locks on the file, shared by descriptors of one open).
enum DiskWriteLocks {
    /// Runs `body` holding stripe `index`'s lock file in `root`, waiting for other writers. When
    /// the file cannot be opened or locked (a read-only folder, where the write fails anyway, or a
    /// file system without locks), `body` runs with the in-process lock alone.
    static func withLock<Result, Failure: Error>(
        root: String,
        stripe index: Int,
        options: DiskStorage.Options,
        _ body: () throws(Failure) -> Result
    ) throws(Failure) -> Result {
        let descriptor = openLockFile(root: root, stripe: index, options: options)
        defer { if descriptor >= 0 { close(descriptor) } }
        if descriptor >= 0 {
            while flock(descriptor, LOCK_EX) != 0 && errno == EINTR {}
        }
        return try body()
    }

    /// Opens stripe `index`'s lock file, making it and its folder (with the storage's permissions)
    /// when missing; `-1` when it cannot.
    private static func openLockFile(root: String, stripe index: Int, options: DiskStorage.Options) -> Int32 {
        let folder = root + "/" + DiskStorage.lockFolderName
        let path = folder + "/" + (index < 10 ? "0\(index)" : "\(index)")
        let flags = O_RDONLY | O_CREAT | O_CLOEXEC
        let permissions = mode_t(options.filePermissions)
        let descriptor = open(path, flags, permissions)
        guard descriptor < 0, errno == ENOENT else { return descriptor }
        guard mkdir(folder, mode_t(options.folderPermissions)) == 0 || errno == EEXIST else { return -1 }
        return open(path, flags, permissions)
    }
}
