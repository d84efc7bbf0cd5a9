/// How long a stored value has left, as `lifetime(forKey:)` reports it on the storages that
/// keep lifetimes.
public enum Lifetime: Sendable, Hashable {
    /// The value never expires.
    case unlimited
    /// The value expires after this long. Storages report only positive ones (an expired value
    /// has no lifetime); given to a storage, for instance by an ``Expiry`` rule, zero or less
    /// means the lifetime has already run out.
    case remaining(Duration)

    /// The lifetime of a value expiring at `expiry` (seconds on the same scale as `now`;
    /// infinite for never), or `nil` if it has expired.
    package init?(expiry: Double, now: Double) {
        if expiry == .infinity {
            self = .unlimited
        } else if expiry > now {
            let nanoseconds = ((expiry - now) * 1e9).rounded()
            // Beyond 292 years in nanoseconds, whole seconds (a lifetime given as, say,
            // `.seconds(Int64.max)`), capped where `Duration` ends.
            self =
                if nanoseconds < 9e18 {
                    .remaining(.nanoseconds(Int64(nanoseconds)))
                } else {
                    .remaining(.seconds(Int64(min(expiry - now, 9e18))))
                }
        } else {
            return nil
        }
    }
}

extension Lifetime {
    /// Whether this lifetime, given to a write, has already run out: the write removes the key.
    package var hasRunOut: Bool {
        if case .remaining(let duration) = self { duration <= .zero } else { false }
    }

    /// When a value written at `now` with this lifetime expires (seconds on the same scale as
    /// `now`; infinite for never).
    package func expiry(after now: Double) -> Double {
        switch self {
        case .unlimited: .infinity
        case .remaining(let duration): now + duration.timeInterval
        }
    }
}
