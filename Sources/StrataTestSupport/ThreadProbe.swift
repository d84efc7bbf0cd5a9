package import Foundation
import Strata
import _StrataInternals

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Records, each time it is called, whether the calling thread was the main thread and whether it
/// was one of Strata's I/O threads: the probe tests put in a storage's I/O path (as its clock,
/// or in a value's decoding) to show where an async call did its work. Any thread may use it.
package final class ThreadProbe: StorageClock, Sendable {
    /// Where one call ran.
    package struct Sighting: Sendable, Equatable {
        package var isMainThread: Bool
        package var isIOThread: Bool
        /// The thread, as ``ThreadProbe/currentThread`` names it.
        package var thread: UInt
    }

    /// Names the calling thread, to compare with a sighting's.
    package static var currentThread: UInt {
        #if canImport(Darwin)
        UInt(bitPattern: pthread_self())
        #else
        UInt(pthread_self())
        #endif
    }

    private let state = LockedState<[Sighting]>([])

    package init() {}

    /// Records the calling thread.
    package func record() {
        let sighting = Sighting(
            isMainThread: Thread.isMainThread,
            isIOThread: BlockingIOPool.isPoolThread,
            thread: Self.currentThread
        )
        state.withLock { $0.append(sighting) }
    }

    /// Every call so far, in order.
    package var sightings: [Sighting] { state.withLock { $0 } }

    /// Forgets the calls so far.
    package func reset() { state.withLock { $0.removeAll() } }

    /// The current time, recorded as a sighting: pass the probe as a storage's clock.
    package func now() -> Date {
        record()
        return Date()
    }
}
