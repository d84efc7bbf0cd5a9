import Foundation

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A mutual-exclusion lock over `pthread_mutex_t`, the cheapest lock a baseline can take.
///
/// It is the bench's own, so that a baseline shares no code with the library it measures. Any
/// thread may use it; it is not recursive.
final class PthreadLock: @unchecked Sendable {
    // Safe: the mutex is allocated once, never moved, and only touched through pthread calls.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        let error = pthread_mutex_init(mutex, nil)
        precondition(error == 0, "pthread_mutex_init failed with error \(error)")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    @inline(__always)
    func withLock<Result>(_ body: () throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}

/// The floor every memory figure is compared with: a bare `[String: Data]` behind a
/// ``PthreadLock``. Any task may use it.
final class MutexDictionary: @unchecked Sendable {
    // Safe: `dictionary` is only read and written inside `lock`.
    private let lock = PthreadLock()
    private var dictionary: [String: Data]

    init(_ dictionary: [String: Data] = [:]) {
        self.dictionary = dictionary
    }

    func value(forKey key: String) -> Data? {
        lock.withLock { dictionary[key] }
    }

    func set(_ value: Data, forKey key: String) {
        // The old value is released inside the lock: the floor does not defer the release the way
        // `MemoryStorage` does.
        lock.withLock { dictionary[key] = value }
    }
}

/// The floor for an evicting cache: a `[String: Data]` behind a ``PthreadLock`` that, past
/// `maximumCount` entries, removes the oldest inserted key (first in, first out).
///
/// The insertion order is a ring of keys, so an eviction is one dictionary removal and no search;
/// removing an arbitrary key instead (`dictionary.remove(at: dictionary.startIndex)`) scans for
/// the first occupied bucket and is no floor. Overwriting a key keeps its place. Any task may
/// use it.
final class EvictingMutexDictionary: @unchecked Sendable {
    // Safe: every stored property but `lock` is only read and written inside `lock`.
    private let lock = PthreadLock()
    private let maximumCount: Int
    private var dictionary: [String: Data]
    /// Keys in insertion order, oldest at `oldest`; a slot is reused once its key is evicted.
    private var ring: [String]
    private var oldest = 0

    init(maximumCount: Int) {
        precondition(maximumCount > 0, "maximumCount must be positive")
        self.maximumCount = maximumCount
        dictionary = Dictionary(minimumCapacity: maximumCount + 1)
        ring = []
        ring.reserveCapacity(maximumCount + 1)
    }

    func set(_ value: Data, forKey key: String) {
        lock.withLock {
            guard dictionary.updateValue(value, forKey: key) == nil else { return }
            if ring.count < maximumCount {
                ring.append(key)
                return
            }
            // Full: the new key takes the oldest key's slot, and the oldest key leaves.
            let evicted = ring[oldest]
            ring[oldest] = key
            oldest = oldest + 1 == maximumCount ? 0 : oldest + 1
            dictionary[evicted] = nil
        }
    }

    var count: Int {
        lock.withLock { dictionary.count }
    }
}
