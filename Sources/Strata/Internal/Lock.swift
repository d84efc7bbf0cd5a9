#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A mutual-exclusion lock over `pthread_mutex_t` (`os_unfair_lock` on Apple platforms).
///
/// `Synchronization.Mutex` is not used: on Linux with Swift 6.3.1, ThreadSanitizer reports false
/// races inside `Mutex.withLock` under contention. Any thread may use a `Lock`; it is not recursive.
@usableFromInline
package final class Lock: @unchecked Sendable {
    // Safe: the pointer is allocated once, never reassigned, and only touched through the
    // platform's lock calls, which are themselves thread-safe.
    #if canImport(Darwin)
    private let pointer: UnsafeMutablePointer<os_unfair_lock>
    #else
    private let pointer: UnsafeMutablePointer<pthread_mutex_t>
    #endif

    package init() {
        #if canImport(Darwin)
        pointer = .allocate(capacity: 1)
        pointer.initialize(to: os_unfair_lock())
        #else
        pointer = .allocate(capacity: 1)
        pointer.initialize(to: pthread_mutex_t())
        let error = pthread_mutex_init(pointer, nil)
        precondition(error == 0, "pthread_mutex_init failed with error \(error)")
        #endif
    }

    deinit {
        #if !canImport(Darwin)
        let error = pthread_mutex_destroy(pointer)
        precondition(error == 0, "pthread_mutex_destroy failed with error \(error)")
        #endif
        pointer.deinitialize(count: 1)
        pointer.deallocate()
    }

    @usableFromInline
    package func lock() {
        #if canImport(Darwin)
        os_unfair_lock_lock(pointer)
        #else
        pthread_mutex_lock(pointer)
        #endif
    }

    @usableFromInline
    package func unlock() {
        #if canImport(Darwin)
        os_unfair_lock_unlock(pointer)
        #else
        pthread_mutex_unlock(pointer)
        #endif
    }

    /// Runs `body` with the lock held. `body` must not call back into code that takes this lock.
    package func withLock<Result, Failure: Error>(
        _ body: () throws(Failure) -> Result
    ) throws(Failure) -> Result {
        lock()
        defer { unlock() }
        return try body()
    }
}

/// A value behind a ``Lock``: the only way to reach it is `withLock`.
@usableFromInline
package final class LockedState<State>: @unchecked Sendable {
    // Safe: `state` is read and written only inside `lock`.
    @usableFromInline let lock = Lock()
    // Unchecked: the lock already makes every access exclusive.
    @exclusivity(unchecked) @usableFromInline var state: State

    package init(_ state: State) {
        self.state = state
    }

    @inlinable
    package func withLock<Result, Failure: Error>(
        _ body: (inout State) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&state)
    }
}
