/// Whether `condition` holds within `timeout`, checking every 5 ms as other tasks and threads run:
/// for what the library finishes on a thread of its own (a listener removed, a monitor armed).
func eventually(within timeout: Duration, _ condition: @escaping @Sendable () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return condition()
}
