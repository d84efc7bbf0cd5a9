/// The one rule for a configuration that cannot work (CONTRIBUTING.md, "Invalid configuration"):
/// a number the code gives (a limit, a count, a duration, a share) or a combination of options
/// that no run can use is a programmer error, and stops the program here with a message that
/// names the type, the option and the value, as the standard library and SwiftNIO do for their
/// arguments. So a literal never makes its caller write `try`. What only the run can judge (a
/// name, a folder, an app group, what a database holds) throws ``StorageError/Code/invalidConfiguration``
/// from a call that can fail anyway.
package enum ConfigurationRule {
    /// Stops with "`owner`: `message`" unless `condition` holds.
    package static func require(
        _ condition: Bool,
        _ message: @autoclosure () -> String,
        in owner: String
    ) {
        if !condition { preconditionFailure("\(owner): \(message())") }
    }

    /// The checks every storage makes of its limits and lifetimes when it is made: a limit must be
    /// positive, a time to live too, and an `Expiry` must be usable beside the time to live.
    ///
    /// - Parameter costName: The name of the cost limit's option, for the message.
    package static func requireUsableLimits<Key, Value>(
        of storage: String,
        maximumCount: Int?,
        maximumCost: Int?,
        costName: String = "maximumByteCount",
        timeToLive: Duration?,
        expiry: Expiry<Key, Value>?
    ) {
        if let problem = limitsProblem(
            maximumCount: maximumCount,
            maximumCost: maximumCost,
            costName: costName,
            timeToLive: timeToLive,
            expiry: expiry
        ) {
            require(false, problem, in: storage)
        }
    }

    /// Why ``requireUsableLimits(of:maximumCount:maximumCost:costName:timeToLive:expiry:)`` stops,
    /// or `nil` when it does not: the message, which the tests check for every hostile value
    /// without a process to stop.
    package static func limitsProblem<Key, Value>(
        maximumCount: Int?,
        maximumCost: Int?,
        costName: String = "maximumByteCount",
        timeToLive: Duration?,
        expiry: Expiry<Key, Value>?
    ) -> String? {
        if let maximumCount, maximumCount <= 0 {
            "maximumCount must be positive, got \(maximumCount)"
        } else if let maximumCost, maximumCost <= 0 {
            "\(costName) must be positive, got \(maximumCost)"
        } else if let timeToLive, timeToLive <= .zero {
            "timeToLive must be positive, got \(timeToLive)"
        } else {
            expiry?.configurationProblem(withTimeToLive: timeToLive)
        }
    }
}
