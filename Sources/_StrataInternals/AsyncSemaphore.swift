/// A counting semaphore for async code, first come first served, whose waiters can be cancelled.
package final class AsyncSemaphore: Sendable {
    private struct State {
        var permits: Int
        var waiters: [(id: UInt64, continuation: CheckedContinuation<Void, any Error>)] = []
        /// Waiters given an ID that have not yet registered their continuation.
        var arriving: Set<UInt64> = []
        var cancelledEarly: Set<UInt64> = []
        var nextID: UInt64 = 0
    }

    private let state: LockedState<State>

    package init(permits: Int) {
        state = LockedState(State(permits: permits))
    }

    package func acquire() async throws {
        let id: UInt64? = state.withLock { state in
            if state.permits > 0 {
                state.permits -= 1
                return nil
            }
            state.nextID &+= 1
            state.arriving.insert(state.nextID)
            return state.nextID
        }
        guard let id else { return }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                enum Outcome { case cancelled, acquired, waiting }
                let outcome = state.withLock { state -> Outcome in
                    state.arriving.remove(id)
                    if state.cancelledEarly.remove(id) != nil { return .cancelled }
                    if state.permits > 0 {
                        state.permits -= 1
                        return .acquired
                    }
                    state.waiters.append((id, continuation))
                    return .waiting
                }
                switch outcome {
                case .cancelled: continuation.resume(throwing: CancellationError())
                case .acquired: continuation.resume()
                case .waiting: break
                }
            }
        } onCancel: {
            let continuation = state.withLock { state -> CheckedContinuation<Void, any Error>? in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else {
                    // Not yet registered: it will see the mark. Already resumed: nothing to do.
                    if state.arriving.contains(id) { state.cancelledEarly.insert(id) }
                    return nil
                }
                return state.waiters.remove(at: index).continuation
            }
            continuation?.resume(throwing: CancellationError())
        }
    }

    package func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, any Error>? in
            if state.waiters.isEmpty {
                state.permits += 1
                return nil
            }
            return state.waiters.removeFirst().continuation
        }
        next?.resume()
    }
}
