#if canImport(Darwin)
package import Darwin
#elseif canImport(Glibc)
package import Glibc
#elseif canImport(Musl)
package import Musl
#endif

/// A POSIX thread started for one closure: Strata's I/O threads, and the second half of
/// ``bothAtOnce(_:_:)``. Neither Dispatch nor the cooperative pool lends it, and ThreadSanitizer
/// understands its start and its join.
package enum POSIXThread {
    /// Starts a thread that runs `body`; `nil` when the system cannot start one. The caller
    /// joins or detaches it.
    package static func start(_ body: @escaping () -> Void) -> pthread_t? {
        let context = Unmanaged.passRetained(Body(body)).toOpaque()
        #if canImport(Darwin)
        var thread: pthread_t?
        #else
        var thread = pthread_t()
        #endif
        let error = pthread_create(
            &thread,
            nil,
            { context in
                #if canImport(Darwin)
                Unmanaged<Body>.fromOpaque(context).takeRetainedValue().run()
                #else
                Unmanaged<Body>.fromOpaque(context!).takeRetainedValue().run()
                #endif
                return nil
            },
            context
        )
        guard error == 0 else {
            Unmanaged<Body>.fromOpaque(context).release()
            return nil
        }
        return thread
    }

    private final class Body {
        let run: () -> Void

        init(_ run: @escaping () -> Void) {
            self.run = run
        }
    }
}

/// Runs `first` on a thread of its own and `second` on the calling thread, and returns both
/// results once both are done: for synchronous work in two independent halves, such as opening a
/// large folder (system calls in one half, building a table in the other), on a caller that
/// already blocks for it.
///
/// The thread is a ``POSIXThread``, joined here, so the join orders both halves' writes before the
/// return, as ThreadSanitizer sees it. Each half must touch only what the other does not write.
/// When no thread can be started, `first` runs after `second` on the calling thread.
package func bothAtOnce<First, Second>(_ first: () -> First, _ second: () -> Second) -> (First, Second) {
    withoutActuallyEscaping(first) { first in
        // Written by the other thread, read here only after the join.
        nonisolated(unsafe) var firstResult: First?
        let thread = POSIXThread.start { firstResult = first() }
        let secondResult = second()
        if let thread {
            pthread_join(thread, nil)
        } else {
            firstResult = first()
        }
        return (firstResult!, secondResult)
    }
}
