#if canImport(Darwin)
public import Darwin
#elseif canImport(Glibc)
public import Glibc
#elseif canImport(Musl)
public import Musl
#endif

/// A number of the calling thread's own, for choosing which of several stripes a thread works in
/// (Java's `ThreadLocalRandom` probe, as Caffeine's read buffers use it): stable while the thread
/// finds its stripe free, and moved by ``advance()`` when it does not, so that two threads that
/// met part.
public enum StripeProbe {
    /// The thread-specific slot that keeps each thread's probe; destroyed never (one per process).
    @usableFromInline static let key: pthread_key_t = {
        var key = pthread_key_t()
        let error = pthread_key_create(&key, nil)
        precondition(error == 0, "pthread_key_create failed with error \(error)")
        return key
    }()

    /// The calling thread's probe, never 0: on a thread's first call, a number made from its
    /// identity.
    @inlinable
    public static func current() -> UInt {
        if let stored = pthread_getspecific(key) { return UInt(bitPattern: stored) }
        return first()
    }

    /// The probe of a thread that has none yet.
    @usableFromInline
    static func first() -> UInt {
        // A thread's identity is an address; mixing spreads neighbouring threads apart.
        var seed = UInt64(UInt(bitPattern: Int(bitPattern: threadIdentity())))
        seed = (seed ^ (seed &>> 33)) &* 0xff51_afd7_ed55_8ccd
        seed = (seed ^ (seed &>> 33)) &* 0xc4ce_b9fe_1a85_ec53
        return store(UInt(truncatingIfNeeded: seed ^ (seed &>> 33)))
    }

    /// Moves the calling thread's probe to another number (xorshift) and returns it.
    public static func advance() -> UInt {
        var probe = current()
        probe ^= probe &<< 13
        probe ^= probe &>> 7
        probe ^= probe &<< 17
        return store(probe)
    }

    /// Lets another thread run: for a thread that has spun a while waiting for a word another
    /// thread will change.
    public static func yieldThread() {
        sched_yield()
    }

    private static func store(_ probe: UInt) -> UInt {
        let probe = probe == 0 ? 0x9e37_79b9 : probe
        pthread_setspecific(key, UnsafeRawPointer(bitPattern: probe))
        return probe
    }

    private static func threadIdentity() -> UnsafeMutableRawPointer? {
        #if canImport(Darwin)
        UnsafeMutableRawPointer(pthread_self())
        #else
        UnsafeMutableRawPointer(bitPattern: UInt(pthread_self()))
        #endif
    }
}
