/// A first-in, first-out mutual exclusion for async code: a holder may await while holding it.
///
/// Waiting is not cancellable; hold it only for short operations. Any task may use it.
@usableFromInline
package final class AsyncMutex: Sendable {
    private struct State {
        var isLocked = false
        var waiters: [CheckedContinuation<Void, Never>] = []
        var head = 0
    }

    private let state = LockedState(State())

    @usableFromInline
    package init() {}

    @usableFromInline
    package func lock() async {
        let acquired = state.withLock { state in
            if state.isLocked { return false }
            state.isLocked = true
            return true
        }
        if acquired { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = state.withLock { state in
                if state.isLocked {
                    state.waiters.append(continuation)
                    return false
                }
                state.isLocked = true
                return true
            }
            if resumeNow { continuation.resume() }
        }
    }

    /// Takes the lock if it is free; returns whether it did. Never waits.
    @usableFromInline
    package func tryLock() -> Bool {
        state.withLock { state in
            if state.isLocked { return false }
            state.isLocked = true
            return true
        }
    }

    /// Hands the lock to the longest waiter, or releases it. The continuation is resumed after
    /// the internal lock is dropped.
    @usableFromInline
    package func unlock() {
        let next: CheckedContinuation<Void, Never>? = state.withLock { state in
            precondition(state.isLocked, "AsyncMutex.unlock() called while unlocked")
            guard state.head < state.waiters.count else {
                state.isLocked = false
                state.waiters.removeAll(keepingCapacity: true)
                state.head = 0
                return nil
            }
            let waiter = state.waiters[state.head]
            state.head += 1
            return waiter  // stays locked: ownership passes to the waiter
        }
        next?.resume()
    }
}
