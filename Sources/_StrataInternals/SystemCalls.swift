package import Foundation

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
package import Musl
#endif

/// A failed system call: which call, on which path, and `errno`, with the system's own words.
package struct SystemCallError: Error, CustomStringConvertible, Sendable {
    package var call: String
    package var path: String
    package var errno: Int32
    /// A directory, FIFO or device was found where a file should be.
    package var isNotARegularFile = false

    package init(call: String, path: String, errno: Int32, isNotARegularFile: Bool = false) {
        self.call = call
        self.path = path
        self.errno = errno
        self.isNotARegularFile = isNotARegularFile
    }

    package var description: String {
        if isNotARegularFile {
            return "\(call)(\(path)): \(errno == EISDIR ? "a directory" : "not a regular file") where a file should be"
        }
        return "\(call)(\(path)): \(String(cString: strerror(errno))) (errno \(errno))"
    }

    package var isNotFound: Bool { errno == ENOENT }
    package var isAlreadyPresent: Bool { errno == EEXIST }
}

/// A buffer holding a file's bytes, freed when the last reference goes away (or handed to a
/// `Data` by ``movingIntoData(_:)``).
package final class FileBytes: @unchecked Sendable {
    // Safe: the buffer is written only while the file is read, before the object is shared, and
    // by `movingIntoData(_:)`, whose caller is its last user.
    package let buffer: UnsafeMutableRawBufferPointer
    /// The file's modification time, seconds since 1970.
    package let modified: Double
    /// The file's whole size, which may exceed the bytes read when a limit was given.
    package let fileSize: Int

    /// The number of bytes read.
    package let count: Int
    /// Whether `deinit` frees the buffer: false once a `Data` has taken it.
    private var ownsBuffer = true

    package init(count: Int, modified: Double, fileSize: Int) {
        // `malloc` rather than `allocate(byteCount:alignment:)`, which takes `posix_memalign` on
        // Linux; the buffer is only ever read byte-wise or with unaligned loads.
        let size = max(count, 1)
        buffer = UnsafeMutableRawBufferPointer(start: Self.allocate(size), count: size)
        self.count = count
        self.modified = modified
        self.fileSize = fileSize
    }

    /// `size` bytes from `malloc`.
    private static func allocate(_ size: Int) -> UnsafeMutableRawPointer {
        guard let base = malloc(size) else { fatalError("FileBytes: cannot allocate \(size) bytes") }
        return base
    }

    /// Takes over `buffer`, from `malloc`, of which the first `count` bytes were read.
    private init(adopting buffer: UnsafeMutableRawBufferPointer, count: Int, modified: Double, fileSize: Int) {
        self.buffer = buffer
        self.count = count
        self.modified = modified
        self.fileSize = fileSize
    }

    /// Reads the whole file at `path`, which the caller expects to be `expectedSize` bytes long,
    /// without asking the system for its size and times: one system call fewer than
    /// ``SystemCalls/readFile(_:in:limit:)-(UnsafePointer<CChar>,_,_)``. `nil` when there is no
    /// such file, when it is longer than expected, or when it cannot be read as a regular file
    /// (the caller then reads it the ordinary way, which says why). ``modified`` is NaN.
    package static func read(_ path: UnsafePointer<CChar>, expectedSize: Int) -> FileBytes? {
        let descriptor = openat(AT_FDCWD, path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        return read(expectedSize: expectedSize) { base, count in
            // A folder (EISDIR), a FIFO (ESPIPE) or a read error: the ordinary read says.
            (try? SystemCalls.readFully(descriptor, into: base, count: count, path: path)) ?? -1
        }
    }

    /// A file expected to be `expectedSize` bytes long, read by `read` (given a buffer and its
    /// size, it returns how many bytes it read, or -1): one byte more is asked for, to see that
    /// the file ends where expected.
    package static func read(
        expectedSize: Int,
        by read: (UnsafeMutableRawPointer, Int) -> Int
    ) -> FileBytes? {
        let capacity = expectedSize + 1
        let base = allocate(capacity)
        let offset = read(base, capacity)
        guard offset >= 0, offset <= expectedSize else {
            free(base)
            return nil
        }
        return FileBytes(
            adopting: UnsafeMutableRawBufferPointer(start: base, count: capacity),
            count: offset,
            modified: .nan,
            fileSize: offset
        )
    }

    deinit {
        if ownsBuffer { free(buffer.baseAddress) }
    }

    /// The bytes at `range` as a `Data` that takes over the buffer, copying nothing and keeping
    /// no object alive for it. At least 8 bytes must come before `range` (a record's header
    /// does): the `Data` keeps there the offset it needs to free the buffer, so they are
    /// overwritten. The caller must not use these bytes afterwards.
    package func movingIntoData(_ range: Range<Int>) -> Data {
        guard !range.isEmpty, let base = buffer.baseAddress else { return Data() }
        precondition(range.lowerBound >= 8 && range.upperBound <= count && ownsBuffer)
        (base + range.lowerBound - 8).storeBytes(of: range.lowerBound, as: Int.self)
        ownsBuffer = false
        return Data(bytesNoCopy: base + range.lowerBound, count: range.count, deallocator: .custom(Self.freeMoved))
    }

    /// All the bytes read as a `Data` that takes over the buffer, copying nothing. The caller
    /// must not use these bytes afterwards.
    package func movingIntoData() -> Data {
        guard count > 0, let base = buffer.baseAddress else { return Data() }
        precondition(ownsBuffer)
        ownsBuffer = false
        return Data(bytesNoCopy: base, count: count, deallocator: .free)
    }

    /// Frees a buffer that ``movingIntoData(_:)`` gave away, from the start of the bytes it gave.
    private static let freeMoved: @Sendable (UnsafeMutableRawPointer, Int) -> Void = { start, _ in
        free(start - (start - 8).loadUnaligned(as: Int.self))
    }

    package var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: buffer[0..<count]) }
}

/// Thin wrappers over the POSIX calls the disk storage needs, each throwing ``SystemCallError``.
package enum SystemCalls {
    private static func fail(_ call: String, _ path: String) -> SystemCallError {
        SystemCallError(call: call, path: path, errno: errno)
    }

    private static func fail(_ call: String, _ path: UnsafePointer<CChar>) -> SystemCallError {
        SystemCallError(call: call, path: String(cString: path), errno: errno)
    }

    package static func modificationTime(_ info: stat) -> Double {
        #if canImport(Darwin)
        Double(info.st_mtimespec.tv_sec) + Double(info.st_mtimespec.tv_nsec) / 1e9
        #else
        Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9
        #endif
    }

    /// Opens `path` for reading, or returns `nil` when it does not exist; a folder, a FIFO or
    /// anything but a regular file throws, flagged ``SystemCallError/isNotARegularFile``. The
    /// caller closes the descriptor.
    private static func openRegularFile(
        _ path: UnsafePointer<CChar>,
        in folder: Int32
    ) throws(SystemCallError) -> (descriptor: Int32, info: stat)? {
        // Non-blocking, so that a FIFO put where a file should be cannot hold the open forever
        // (regular files ignore the flag).
        let descriptor = openat(folder, path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        if descriptor < 0 {
            if errno == ENOENT || errno == ENOTDIR { return nil }
            throw fail("open", path)
        }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            let error = fail("fstat", path)
            close(descriptor)
            throw error
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            close(descriptor)
            throw SystemCallError(
                call: "read",
                path: String(cString: path),
                errno: info.st_mode & S_IFMT == S_IFDIR ? EISDIR : EINVAL,
                isNotARegularFile: true
            )
        }
        return (descriptor, info)
    }

    /// Reads up to `count` bytes from the start of `descriptor` into `base`; returns how many it
    /// read, fewer when the file shrank while being read.
    fileprivate static func readFully(
        _ descriptor: Int32,
        into base: UnsafeMutableRawPointer,
        count: Int,
        path: UnsafePointer<CChar>
    ) throws(SystemCallError) -> Int {
        var offset = 0
        while offset < count {
            let read = pread(descriptor, base + offset, count - offset, off_t(offset))
            if read < 0 {
                if errno == EINTR { continue }
                throw fail("read", path)
            }
            if read == 0 { break }
            offset += read
        }
        return offset
    }

    /// Reads a whole file, or returns `nil` when it does not exist. With `limit`, reads at most
    /// that many bytes from the start. With `folder`, the descriptor of an open folder, `path` is
    /// relative to it, which spares the kernel looking up every folder of a whole path.
    package static func readFile(
        _ path: String,
        in folder: Int32 = AT_FDCWD,
        limit: Int = .max
    ) throws(SystemCallError) -> FileBytes? {
        try withCString(path) { (path) throws(SystemCallError) in try readFile(path, in: folder, limit: limit) }
    }

    /// ``readFile(_:in:limit:)`` for a path the caller already has as a C string, which spares
    /// making one.
    package static func readFile(
        _ path: UnsafePointer<CChar>,
        in folder: Int32 = AT_FDCWD,
        limit: Int = .max
    ) throws(SystemCallError) -> FileBytes? {
        guard let (descriptor, info) = try openRegularFile(path, in: folder) else { return nil }
        defer { close(descriptor) }
        let count = min(Int(info.st_size), limit)
        let file = FileBytes(count: count, modified: modificationTime(info), fileSize: Int(info.st_size))
        guard let base = file.buffer.baseAddress else { return file }
        let read = try readFully(descriptor, into: base, count: count, path: path)
        if read < count {
            // The file shrank while being read: return what is there; the checksum will tell.
            let shorter = FileBytes(count: read, modified: file.modified, fileSize: read)
            shorter.buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: file.buffer[0..<read]))
            return shorter
        }
        return file
    }

    /// Reads a whole file straight into `Data`, or returns `nil` when it does not exist; as
    /// ``readFile(_:in:limit:)``, anything but a regular file throws.
    package static func readData(_ path: String) throws(SystemCallError) -> Data? {
        try withCString(path) { (path) throws(SystemCallError) in try readData(path) }
    }

    private static func readData(_ path: UnsafePointer<CChar>) throws(SystemCallError) -> Data? {
        guard let (descriptor, info) = try openRegularFile(path, in: AT_FDCWD) else { return nil }
        defer { close(descriptor) }
        var data = Data(count: Int(info.st_size))
        let count = data.count
        let outcome = data.withUnsafeMutableBytes { buffer in
            Result { () throws(SystemCallError) -> Int in
                guard let base = buffer.baseAddress else { return 0 }
                return try readFully(descriptor, into: base, count: count, path: path)
            }
        }
        let read = try outcome.get()
        if read < data.count { data.removeSubrange(read...) }  // the file shrank while being read
        return data
    }

    /// Writes `bytes` as ``writeAtomically(_:to:temporaryPath:folder:permissions:durable:)``
    /// writes chunks: to `temporaryPath`, then renamed to `path`.
    package static func writeAtomically(
        _ bytes: some ContiguousBytes,
        to path: String,
        temporaryPath: String,
        folder: String,
        permissions: mode_t,
        durable: Bool
    ) throws(SystemCallError) {
        let written = bytes.withUnsafeBytes { buffer in
            Result { () throws(SystemCallError) in
                try writeAtomically(
                    [buffer],
                    to: path,
                    temporaryPath: temporaryPath,
                    folder: folder,
                    permissions: permissions,
                    durable: durable
                )
            }
        }
        try written.get()
    }

    /// Writes `chunks` to a new file at `temporaryPath` and renames it to `path`, so a reader sees
    /// the old file or the new one, never a mix. With `durable`, the file and then its folder are
    /// synced before returning. On failure the temporary file is removed.
    package static func writeAtomically(
        _ chunks: [UnsafeRawBufferPointer],
        to path: String,
        temporaryPath: String,
        folder: String,
        permissions: mode_t,
        durable: Bool
    ) throws(SystemCallError) {
        let descriptor = open(temporaryPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, permissions)
        guard descriptor >= 0 else { throw fail("open", temporaryPath) }
        var closed = false
        do throws(SystemCallError) {
            var vectors = chunks.map {
                iovec(iov_base: UnsafeMutableRawPointer(mutating: $0.baseAddress), iov_len: $0.count)
            }
            var remaining = chunks.reduce(0) { $0 + $1.count }
            var first = 0
            while remaining > 0 {
                let written = vectors.withUnsafeMutableBufferPointer { buffer in
                    guard let base = buffer.baseAddress else { return 0 }
                    return writev(descriptor, base + first, Int32(buffer.count - first))
                }
                if written < 0 {
                    if errno == EINTR { continue }
                    throw fail("write", temporaryPath)
                }
                if written == 0 {
                    // No progress on a regular file: report it rather than loop.
                    errno = EIO
                    throw fail("write", temporaryPath)
                }
                remaining -= written
                // Skip what was written: whole vectors, then part of the next.
                var left = written
                while left > 0, first < vectors.count {
                    if left >= vectors[first].iov_len {
                        left -= vectors[first].iov_len
                        first += 1
                    } else {
                        vectors[first].iov_base = vectors[first].iov_base.map { $0 + left }
                        vectors[first].iov_len -= left
                        left = 0
                    }
                }
                while first < vectors.count, vectors[first].iov_len == 0 { first += 1 }
            }
            if durable { try flush(descriptor, path: temporaryPath) }
            closed = true
            if close(descriptor) != 0 { throw fail("close", temporaryPath) }
            if rename(temporaryPath, path) != 0 { throw fail("rename", path) }
        } catch {
            if !closed { close(descriptor) }
            unlink(temporaryPath)
            throw error
        }
        if durable {
            try syncFolder(folder)
        }
    }

    /// Syncs a folder, so a rename, creation or removal inside it survives power loss.
    package static func syncFolder(_ path: String) throws(SystemCallError) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw fail("open", path) }
        defer { close(descriptor) }
        try flush(descriptor, path: path)
    }

    /// Flushes a file or folder to stable storage. On Apple platforms `fsync` leaves the data in
    /// the drive's cache, so this asks for `F_FULLFSYNC`, as SQLite does, and falls back to
    /// `fsync` on file systems that do not support it; elsewhere `fsync` reaches the medium.
    package static func flush(_ descriptor: Int32, path: String) throws(SystemCallError) {
        #if canImport(Darwin)
        if fcntl(descriptor, F_FULLFSYNC) == 0 {
            flushes.record(path)
            return
        }
        #endif
        if fsync(descriptor) != 0 { throw fail("fsync", path) }
        flushes.record(path)
    }

    /// The paths flushed under folders a test watches, so it can check what durability synced.
    package static let flushes = FlushLog()

    /// Opens a folder for ``readFile(_:in:limit:)``, or returns `nil` when it does not exist.
    /// Close the descriptor with `close`.
    package static func openFolder(_ path: String) throws(SystemCallError) -> Int32? {
        let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if descriptor < 0 {
            if errno == ENOENT || errno == ENOTDIR { return nil }
            throw fail("open", path)
        }
        return descriptor
    }

    /// Removes a file; a missing file is not an error. Returns whether a file was removed.
    @discardableResult
    package static func remove(_ path: String) throws(SystemCallError) -> Bool {
        if unlink(path) == 0 { return true }
        if errno == ENOENT || errno == ENOTDIR { return false }
        throw fail("unlink", path)
    }

    /// Whether something exists at `path`.
    package static func fileExists(_ path: String) -> Bool {
        access(path, F_OK) == 0
    }

    /// Renames a file.
    package static func move(_ source: String, to destination: String) throws(SystemCallError) {
        if rename(source, destination) != 0 { throw fail("rename", source) }
    }

    /// Removes an empty folder; a missing one is not an error.
    package static func removeFolder(_ path: String) throws(SystemCallError) {
        if rmdir(path) != 0, errno != ENOENT { throw fail("rmdir", path) }
    }

    /// Creates a folder; an existing one is fine. Returns whether it was created.
    @discardableResult
    package static func makeFolder(_ path: String, permissions: mode_t) throws(SystemCallError) -> Bool {
        if mkdir(path, permissions) == 0 { return true }
        if errno != EEXIST { throw fail("mkdir", path) }
        return false
    }

    /// Creates a folder and its missing parents. When `durable`, the parent of each folder it
    /// creates is synced, so the new folder's entry survives power loss along with what is
    /// later written inside it.
    package static func makeFolders(_ path: String, permissions: mode_t, durable: Bool = false) throws(SystemCallError)
    {
        var prefix = path.hasPrefix("/") ? "" : "."
        var parent = prefix.isEmpty ? "/" : prefix
        for component in path.split(separator: "/") {
            prefix += "/" + component
            if try makeFolder(prefix, permissions: permissions), durable {
                try syncFolder(parent)
            }
            parent = prefix
        }
    }

    /// The names in a folder, without "." and "..", or `nil` if the folder does not exist.
    package static func contents(of path: String) throws(SystemCallError) -> [String]? {
        guard let directory = opendir(path) else {
            if errno == ENOENT || errno == ENOTDIR { return nil }
            throw fail("opendir", path)
        }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// A folder's modification time and the names and inode numbers of what it holds (without
    /// "." and ".."), or `nil` if the folder does not exist. The time is taken before the
    /// listing, so a change made during it shows as a later time.
    package static func listing(
        of path: String
    ) throws(SystemCallError) -> (
        modified: (seconds: Int64, nanoseconds: Int64), entries: [(name: String, inode: UInt64)]
    )? {
        let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if descriptor < 0 {
            if errno == ENOENT || errno == ENOTDIR { return nil }
            throw fail("open", path)
        }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            close(descriptor)
            throw fail("fstat", path)
        }
        // The stream owns the descriptor from here: closedir closes it.
        guard let directory = fdopendir(descriptor) else {
            close(descriptor)
            throw fail("opendir", path)
        }
        defer { closedir(directory) }
        #if canImport(Darwin)
        let modified = (Int64(info.st_mtimespec.tv_sec), Int64(info.st_mtimespec.tv_nsec))
        #else
        let modified = (Int64(info.st_mtim.tv_sec), Int64(info.st_mtim.tv_nsec))
        #endif
        var entries: [(name: String, inode: UInt64)] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { entries.append((name, UInt64(entry.pointee.d_ino))) }
        }
        return (modified, entries)
    }

    /// Sets a file's modification time to `seconds` since 1970.
    package static func touch(_ path: String, at seconds: Double) {
        let whole = seconds.rounded(.down)
        var times = [
            timespec(tv_sec: Int(whole), tv_nsec: Int((seconds - whole) * 1e9)),
            timespec(tv_sec: Int(whole), tv_nsec: Int((seconds - whole) * 1e9)),
        ]
        _ = utimensat(AT_FDCWD, path, &times, 0)
    }

    /// Whether a process with this ID is running.
    package static func processExists(_ pid: Int32) -> Bool {
        kill(pid, 0) == 0 || errno == EPERM
    }

    package static var currentProcessID: Int32 { getpid() }
}

/// Records the paths ``SystemCalls/flush(_:path:)`` flushed under the folders being watched;
/// empty and nearly free when nothing is watched. Any thread may use it.
package final class FlushLog: Sendable {
    private let state = LockedState<[String: [String]]>([:])

    /// Starts recording flushes of paths under `folder` (and `folder` itself).
    package func watch(_ folder: String) {
        state.withLock { $0[folder] = [] }
    }

    /// Stops watching `folder` and returns the paths flushed under it, in order.
    package func stopWatching(_ folder: String) -> [String] {
        state.withLock { $0.removeValue(forKey: folder) } ?? []
    }

    package func record(_ path: String) {
        state.withLock { watched in
            guard !watched.isEmpty else { return }
            for folder in watched.keys where path == folder || path.hasPrefix(folder + "/") {
                watched[folder]?.append(path)
            }
        }
    }
}

extension SystemCalls {
    /// `path.withCString(body)` for a body that throws ``SystemCallError``.
    static func withCString<Result>(
        _ path: String,
        _ body: (UnsafePointer<CChar>) throws(SystemCallError) -> Result
    ) throws(SystemCallError) -> Result {
        let outcome = path.withCString { path in Swift.Result { () throws(SystemCallError) in try body(path) } }
        return try outcome.get()
    }
}
