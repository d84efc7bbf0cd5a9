#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The platform's lock, used in place: `pthread_mutex_t` (`os_unfair_lock` on Apple platforms).
///
/// `Lock` owns one; ``MemoryStorage``'s shards keep theirs inline in one allocation, so a read
/// loads no other object. The functions take raw pointers so that inlinable code can call them
/// without seeing the platform's types.
@usableFromInline
package enum PlatformMutex {
    #if canImport(Darwin)
    typealias Primitive = os_unfair_lock
    #else
    typealias Primitive = pthread_mutex_t
    #endif

    /// The bytes one lock takes.
    static var size: Int { MemoryLayout<Primitive>.stride }
    /// The alignment one lock needs.
    static var alignment: Int { MemoryLayout<Primitive>.alignment }

    /// Initializes a lock at `pointer`, which must stay at that address until ``destroy(_:)``.
    static func initialize(_ pointer: UnsafeMutableRawPointer) {
        let lock = pointer.bindMemory(to: Primitive.self, capacity: 1)
        #if canImport(Darwin)
        lock.initialize(to: os_unfair_lock())
        #else
        lock.initialize(to: pthread_mutex_t())
        let error = pthread_mutex_init(lock, nil)
        precondition(error == 0, "pthread_mutex_init failed with error \(error)")
        #endif
    }

    static func destroy(_ pointer: UnsafeMutableRawPointer) {
        let lock = pointer.assumingMemoryBound(to: Primitive.self)
        #if !canImport(Darwin)
        let error = pthread_mutex_destroy(lock)
        precondition(error == 0, "pthread_mutex_destroy failed with error \(error)")
        #endif
        lock.deinitialize(count: 1)
    }

    @usableFromInline
    static func lock(_ pointer: UnsafeMutableRawPointer) {
        #if canImport(Darwin)
        os_unfair_lock_lock(pointer.assumingMemoryBound(to: Primitive.self))
        #else
        pthread_mutex_lock(pointer.assumingMemoryBound(to: Primitive.self))
        #endif
    }

    @usableFromInline
    static func unlock(_ pointer: UnsafeMutableRawPointer) {
        #if canImport(Darwin)
        os_unfair_lock_unlock(pointer.assumingMemoryBound(to: Primitive.self))
        #else
        pthread_mutex_unlock(pointer.assumingMemoryBound(to: Primitive.self))
        #endif
    }

    /// Takes the lock if no one holds it, without waiting; returns whether it did.
    @usableFromInline
    static func tryLock(_ pointer: UnsafeMutableRawPointer) -> Bool {
        #if canImport(Darwin)
        os_unfair_lock_trylock(pointer.assumingMemoryBound(to: Primitive.self))
        #else
        pthread_mutex_trylock(pointer.assumingMemoryBound(to: Primitive.self)) == 0
        #endif
    }
}

/// A mutual-exclusion lock over ``PlatformMutex``.
///
/// `Synchronization.Mutex` is not used: on Linux with Swift 6.3.1, ThreadSanitizer reports false
/// races inside `Mutex.withLock` under contention. Any thread may use a `Lock`; it is not recursive.
@usableFromInline
package final class Lock: @unchecked Sendable {
    // Safe: the pointer is allocated once, never reassigned, and only touched through the
    // platform's lock calls, which are themselves thread-safe.
    @usableFromInline let pointer: UnsafeMutableRawPointer

    package init() {
        pointer = .allocate(byteCount: PlatformMutex.size, alignment: PlatformMutex.alignment)
        PlatformMutex.initialize(pointer)
    }

    deinit {
        PlatformMutex.destroy(pointer)
        pointer.deallocate()
    }

    @inlinable
    package func lock() {
        PlatformMutex.lock(pointer)
    }

    @inlinable
    package func unlock() {
        PlatformMutex.unlock(pointer)
    }

    /// Takes the lock if no one holds it, without waiting; returns whether it did.
    @inlinable
    package func tryLock() -> Bool {
        PlatformMutex.tryLock(pointer)
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
///
/// Sendable when its state is: the lock makes every access exclusive, but a state that is not
/// Sendable could still be handed out of `withLock` to another task, so the compiler checks it.
@usableFromInline
package final class LockedState<State> {
    // Safe (for the conformance below): `state` is read and written only inside `lock`.
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

    /// Runs `body` with the lock held if no one holds it now; returns `nil` without waiting if
    /// someone does.
    @inlinable
    package func withLockIfAvailable<Result>(_ body: (inout State) -> Result) -> Result? {
        guard lock.tryLock() else { return nil }
        defer { lock.unlock() }
        return body(&state)
    }
}

extension LockedState: @unchecked Sendable where State: Sendable {}
