#if Postgres
import Synchronization

/// A boolean that any task may set and read.
final class Flag: Sendable {
    private let state = Atomic(false)

    /// Sets the flag.
    func set() {
        state.store(true, ordering: .releasing)
    }

    /// Whether the flag was set.
    var isSet: Bool {
        state.load(ordering: .acquiring)
    }
}
#endif
