/// How long a stored value has left, as `lifetime(forKey:)` reports it on the storages that
/// keep lifetimes.
public enum Lifetime: Sendable, Hashable {
    /// The value never expires.
    case unlimited
    /// The value expires after this long (always positive: an expired value has no lifetime).
    case remaining(Duration)

    /// The lifetime of a value expiring at `expiry` (seconds on the same scale as `now`;
    /// infinite for never), or `nil` if it has expired.
    package init?(expiry: Double, now: Double) {
        if expiry == .infinity {
            self = .unlimited
        } else if expiry > now {
            self = .remaining(.nanoseconds(Int64(((expiry - now) * 1e9).rounded())))
        } else {
            return nil
        }
    }
}
