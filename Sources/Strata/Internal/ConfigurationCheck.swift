extension StorageError {
    /// The ``Code/invalidConfiguration`` error of limits and lifetimes a storage cannot use, or
    /// `nil` when it can use them: the checks every storage makes when it is made, in one place.
    /// A limit must be positive, a time to live too, and an `Expiry` must be usable beside the
    /// time to live.
    ///
    /// - Parameter costName: The name of the cost limit's option, for the message.
    package static func checkingLimits<Key, Value>(
        of storage: String,
        maximumCount: Int?,
        maximumCost: Int?,
        costName: String = "maximumByteCount",
        timeToLive: Duration?,
        expiry: Expiry<Key, Value>?
    ) -> StorageError? {
        let problem: String? =
            if let maximumCount, maximumCount <= 0 {
                "maximumCount must be positive, got \(maximumCount)"
            } else if let maximumCost, maximumCost <= 0 {
                "\(costName) must be positive, got \(maximumCost)"
            } else if let timeToLive, timeToLive <= .zero {
                "timeToLive must be positive, got \(timeToLive)"
            } else {
                expiry?.configurationProblem(withTimeToLive: timeToLive)
            }
        return problem.map { StorageError(.invalidConfiguration, storage: storage, message: $0) }
    }
}
