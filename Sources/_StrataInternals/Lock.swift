#if canImport(Darwin)
public import Darwin
#elseif canImport(Glibc)
public import Glibc
#elseif canImport(Musl)
public import Musl
#endif

/// The platform's lock, used in place: `pthread_mutex_t` (`os_unfair_lock` on Apple platforms).
///
/// `Lock` owns one; `MemoryStorage`'s shards keep theirs inline in one allocation, so a read
/// loads no other object. The functions take raw pointers so that inlinable code can call them
/// without seeing the platform's types.
public enum PlatformMutex {
    #if canImport(Darwin)
    public typealias Primitive = os_unfair_lock
    #else
    public typealias Primitive = pthread_mutex_t
    #endif

    /// The bytes one lock takes.
    package static var size: Int { MemoryLayout<Primitive>.stride }
    /// The alignment one lock needs.
    package static var alignment: Int { MemoryLayout<Primitive>.alignment }

    /// Initializes a lock at `pointer`, which must stay at that address until ``destroy(_:)``.
    public static func initialize(_ pointer: UnsafeMutableRawPointer) {
        let lock = pointer.bindMemory(to: Primitive.self, capacity: 1)
        #if canImport(Darwin)
        lock.initialize(to: os_unfair_lock())
        #else
        lock.initialize(to: pthread_mutex_t())
        #if canImport(Glibc)
        // Adaptive: a thread that finds the lock held spins a little before it sleeps. Strata's
        // critical sections are a few dozen instructions, so the holder is nearly always about to
        // let go, and sleeping costs a futex wait and wake (a system call each, microseconds)
        // where spinning costs nanoseconds: a burst of requests through `coordinated()` from the
        // cooperative threads of a 2-core machine contended on every registration.
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        defer { pthread_mutexattr_destroy(&attributes) }
        pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ADAPTIVE_NP))
        let error = pthread_mutex_init(lock, &attributes)
        #else
        let error = pthread_mutex_init(lock, nil)
        #endif
        precondition(error == 0, "pthread_mutex_init failed with error \(error)")
        #endif
    }

    public static func destroy(_ pointer: UnsafeMutableRawPointer) {
        let lock = pointer.assumingMemoryBound(to: Primitive.self)
        #if !canImport(Darwin)
        let error = pthread_mutex_destroy(lock)
        precondition(error == 0, "pthread_mutex_destroy failed with error \(error)")
        #endif
        lock.deinitialize(count: 1)
    }

    @inlinable
    public static func lock(_ pointer: UnsafeMutableRawPointer) {
        #if canImport(Darwin)
        os_unfair_lock_lock(pointer.assumingMemoryBound(to: Primitive.self))
        #else
        pthread_mutex_lock(pointer.assumingMemoryBound(to: Primitive.self))
        #endif
    }

    @inlinable
    public static func unlock(_ pointer: UnsafeMutableRawPointer) {
        #if canImport(Darwin)
        os_unfair_lock_unlock(pointer.assumingMemoryBound(to: Primitive.self))
        #else
        pthread_mutex_unlock(pointer.assumingMemoryBound(to: Primitive.self))
        #endif
    }

    /// Takes the lock if no one holds it, without waiting; returns whether it did.
    @inlinable
    public static func tryLock(_ pointer: UnsafeMutableRawPointer) -> Bool {
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
public final class Lock: @unchecked Sendable {
    // Safe: the pointer is allocated once, never reassigned, and only touched through the
    // platform's lock calls, which are themselves thread-safe.
    public let pointer: UnsafeMutableRawPointer

    public init() {
        pointer = .allocate(byteCount: PlatformMutex.size, alignment: PlatformMutex.alignment)
        PlatformMutex.initialize(pointer)
    }

    deinit {
        PlatformMutex.destroy(pointer)
        pointer.deallocate()
    }

    @inlinable
    public func lock() {
        PlatformMutex.lock(pointer)
    }

    @inlinable
    public func unlock() {
        PlatformMutex.unlock(pointer)
    }

    /// Takes the lock if no one holds it, without waiting; returns whether it did.
    @inlinable
    public func tryLock() -> Bool {
        PlatformMutex.tryLock(pointer)
    }

    /// Runs `body` with the lock held. `body` must not call back into code that takes this lock.
    @inlinable
    public func withLock<Result, Failure: Error>(
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
public final class LockedState<State> {
    // Safe (for the conformance below): `state` is read and written only inside `lock`.
    public let lock = Lock()
    // Unchecked: the lock already makes every access exclusive.
    @exclusivity(unchecked) public var state: State

    public init(_ state: State) {
        self.state = state
    }

    @inlinable
    public func withLock<Result, Failure: Error>(
        _ body: (inout State) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&state)
    }

    /// Runs `body` with the lock held if no one holds it now; returns `nil` without waiting if
    /// someone does.
    @inlinable
    public func withLockIfAvailable<Result>(_ body: (inout State) -> Result) -> Result? {
        guard lock.tryLock() else { return nil }
        defer { lock.unlock() }
        return body(&state)
    }
}

extension LockedState: @unchecked Sendable where State: Sendable {}
