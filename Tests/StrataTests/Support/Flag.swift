import Synchronization

/// A flag one task raises and others read. Any task may use it.
final class Flag: Sendable {
    private let value = Atomic<Bool>(false)

    func raise() {
        value.store(true, ordering: .sequentiallyConsistent)
    }

    var isRaised: Bool {
        value.load(ordering: .sequentiallyConsistent)
    }
}
