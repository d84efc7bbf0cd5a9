import Foundation

/// How long to wait between attempts: exponential growth with random jitter, so that many
/// clients that failed together do not retry together.
public struct Backoff: Sendable, Hashable {
    /// The wait before the second attempt.
    public var initial: Duration
    /// How much each wait grows over the previous one.
    public var multiplier: Double
    /// The longest wait.
    public var maximum: Duration
    /// The fraction of each wait that is random: 0 for none, 1 for anywhere between zero and
    /// the full wait ("full jitter").
    public var jitter: Double

    /// Creates a backoff. `jitter` is clamped to 0…1.
    public init(initial: Duration, multiplier: Double = 2, maximum: Duration = .seconds(30), jitter: Double = 0.5) {
        self.initial = initial
        self.multiplier = max(multiplier, 1)
        self.maximum = maximum
        self.jitter = min(max(jitter, 0), 1)
    }

    /// 100 ms, doubling up to 30 s, half of each wait random.
    public static let `default` = Backoff(initial: .milliseconds(100))

    /// The wait after failed attempt number `attempt` (1-based), with `random` in 0..<1.
    public func delay(afterAttempt attempt: Int, random: Double) -> Duration {
        let growth = Foundation.pow(multiplier, Double(max(attempt - 1, 0)))
        let full = min(initial.timeInterval * growth, maximum.timeInterval)
        let seconds = full * (1 - jitter) + full * jitter * random
        return .nanoseconds(Int64(seconds * 1e9))
    }
}
