#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Runs `first` on a thread of its own and `second` on the calling thread, and returns both
/// results once both are done: for synchronous work in two independent halves, such as opening a
/// large folder (system calls in one half, building a table in the other), on a caller that
/// already blocks for it.
///
/// The thread is a plain POSIX thread, started and joined here, so neither Dispatch nor the
/// cooperative pool lends one, and the join orders both halves' writes before the return, as
/// ThreadSanitizer sees it. Each half must touch only what the other does not write. When no
/// thread can be started, `first` runs after `second` on the calling thread.
func bothAtOnce<First, Second>(_ first: () -> First, _ second: () -> Second) -> (First, Second) {
    withoutActuallyEscaping(first) { first in
        let half = Half(first)
        let context = Unmanaged.passRetained(half).toOpaque()
        #if canImport(Darwin)
        var thread: pthread_t?
        #else
        var thread = pthread_t()
        #endif
        let started =
            pthread_create(
                &thread,
                nil,
                { context in
                    #if canImport(Darwin)
                    let half = Unmanaged<AnyHalf>.fromOpaque(context).takeRetainedValue()
                    #else
                    let half = Unmanaged<AnyHalf>.fromOpaque(context!).takeRetainedValue()
                    #endif
                    half.run()
                    return nil
                },
                context
            ) == 0
        if !started { Unmanaged<Half<First>>.fromOpaque(context).release() }
        let secondResult = second()
        if started {
            #if canImport(Darwin)
            if let thread { pthread_join(thread, nil) }
            #else
            pthread_join(thread, nil)
            #endif
        } else {
            half.run()
        }
        return (half.result!, secondResult)
    }
}

/// The half of ``bothAtOnce(_:_:)`` that runs on its own thread.
private class AnyHalf {
    func run() {}
}

private final class Half<Result>: AnyHalf {
    let body: () -> Result
    var result: Result?

    init(_ body: @escaping () -> Result) {
        self.body = body
    }

    override func run() {
        result = body()
    }
}
