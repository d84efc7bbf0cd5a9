import Foundation

/// A value behind a lock, for rules that record what they were given.
package final class LockedBox<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value

    package init(_ value: Value) { stored = value }

    package var value: Value {
        lock.lock()
        defer { lock.unlock() }
        return stored
    }

    package func mutate(_ body: (inout Value) -> Void) {
        lock.lock()
        defer { lock.unlock() }
        body(&stored)
    }
}
