/// The error ``StorageBehaviourSuite/run()`` throws when a storage breaks one or more of the rules
/// every storage must keep, listing each broken rule with what was expected and what was seen.
///
/// Any task may use it.
public struct BehaviourViolation: Error, Sendable, CustomStringConvertible {
    /// One rule a storage broke.
    public struct Failure: Sendable, CustomStringConvertible {
        /// The name of the check that failed, such as `"overwrite replaces"`.
        public var check: String
        /// What the rule requires.
        public var expected: String
        /// What the storage did instead.
        public var seen: String

        /// Creates a failure of `check`.
        public init(check: String, expected: String, seen: String) {
            self.check = check
            self.expected = expected
            self.seen = seen
        }

        /// One line for a person.
        public var description: String {
            "\(check): expected \(expected), saw \(seen)"
        }
    }

    /// The type of the storage that was checked.
    public var storage: String
    /// Every failed check, in the order the checks ran; never empty.
    public var failures: [Failure]

    /// Creates a violation of `storage` listing `failures`.
    public init(storage: String, failures: [Failure]) {
        self.storage = storage
        self.failures = failures
    }

    /// The names of the failed checks.
    public var failedChecks: [String] {
        failures.map(\.check)
    }

    /// One line for a person.
    public var description: String {
        let count = failures.count == 1 ? "1 check" : "\(failures.count) checks"
        return "\(storage) failed \(count):\n" + failures.map { "- \($0)" }.joined(separator: "\n")
    }
}
