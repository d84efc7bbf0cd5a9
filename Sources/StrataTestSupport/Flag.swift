import Synchronization

/// A flag one task raises and others read. Any task may use it.
package final class Flag: Sendable {
    private let value = Atomic<Bool>(false)

    package init() {}

    package func raise() {
        value.store(true, ordering: .sequentiallyConsistent)
    }

    package var isRaised: Bool {
        value.load(ordering: .sequentiallyConsistent)
    }
}
