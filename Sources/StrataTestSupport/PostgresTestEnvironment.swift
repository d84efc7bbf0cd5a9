import Foundation

/// The PostgreSQL server the tests use: the one `STRATA_POSTGRES_URL` names. Tests never skip
/// without one: they fail, saying how to start one.
package enum PostgresTestEnvironment {
    package struct Unavailable: Error, CustomStringConvertible {
        package var description: String

        package init(description: String) {
            self.description = description
        }
    }

    /// The server's URL, or an error saying how to get one.
    package static func url() throws -> String {
        guard let url = ProcessInfo.processInfo.environment["STRATA_POSTGRES_URL"], !url.isEmpty else {
            throw Unavailable(
                description: """
                    STRATA_POSTGRES_URL is not set, so the PostgreSQL tests cannot run. Run scripts/test.sh \
                    (it starts a throwaway server), or start one with `eval "$(scripts/postgres.sh start)"`.
                    """
            )
        }
        return url
    }

    /// A table name no other test uses.
    package static func uniqueTable() -> String {
        "strata_test_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(16)
    }
}
