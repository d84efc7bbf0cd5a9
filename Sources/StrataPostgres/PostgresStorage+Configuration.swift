#if Postgres
import Foundation
import NIOCore
import NIOSSL
public import PostgresNIO
public import Strata

extension PostgresStorage {
    // MARK: Configuration

    /// Whether `name` can name a table unquoted: lowercase letters, digits and underscores, at
    /// most 48 bytes, starting with a letter or underscore, and not a word PostgreSQL reserves
    /// (`user`, `order`: they would fail later with a syntax error).
    package static func isValidTableName(_ name: String) -> Bool {
        guard let first = name.utf8.first, name.utf8.count <= 48, !reservedWords.contains(name) else { return false }
        let isLetter = { (byte: UInt8) in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || byte == UInt8(ascii: "_")
        }
        return isLetter(first)
            && name.utf8.allSatisfy { isLetter($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
    }

    /// What a table name cannot be: PostgreSQL 15's reserved key words, those reserved outright
    /// and those that can name only a function or type (Appendix C of its documentation).
    package static let reservedWords: Set<String> = [
        "all", "analyse", "analyze", "and", "any", "array", "as", "asc", "asymmetric", "authorization", "binary",
        "both", "case", "cast", "check", "collate", "collation", "column", "concurrently", "constraint", "create",
        "cross", "current_catalog", "current_date", "current_role", "current_schema", "current_time",
        "current_timestamp", "current_user", "default", "deferrable", "desc", "distinct", "do", "else", "end",
        "except", "false", "fetch", "for", "foreign", "freeze", "from", "full", "grant", "group", "having", "ilike",
        "in", "initially", "inner", "intersect", "into", "is", "isnull", "join", "lateral", "leading", "left", "like",
        "limit", "localtime", "localtimestamp", "natural", "not", "notnull", "null", "offset", "on", "only", "or",
        "order", "outer", "overlaps", "placing", "primary", "references", "returning", "right", "select",
        "session_user", "similar", "some", "symmetric", "system_user", "table", "tablesample", "then", "to",
        "trailing", "true", "union", "unique", "user", "using", "variadic", "verbose", "when", "where", "window",
        "with",
    ]

    /// `url` with its password, if it has one, replaced by `***`: what an error or a log may say
    /// of a server's URL. Works on text that is not a valid URL too (the user and password are
    /// what lies between `://` and the last `@` before the path).
    public static func redacted(_ url: String) -> String {
        guard let schemeEnd = url.range(of: "://") else { return url }
        let authorityEnd = url[schemeEnd.upperBound...].firstIndex(where: { "/?#".contains($0) }) ?? url.endIndex
        let authority = url[schemeEnd.upperBound..<authorityEnd]
        guard let at = authority.lastIndex(of: "@"),
            let colon = authority[..<at].firstIndex(of: ":")
        else { return url }
        return String(url[..<url.index(after: colon)]) + "***" + String(url[at...])
    }

    /// Parses a `postgres://` URL into a client configuration.
    public static func configuration(from url: String) throws(StorageError) -> PostgresClient.Configuration {
        func invalid(_ message: String) -> StorageError {
            StorageError(.invalidConfiguration, storage: "PostgresStorage", message: message)
        }
        guard let components = URLComponents(string: url),
            components.scheme == "postgres" || components.scheme == "postgresql"
        else {
            throw invalid("'\(redacted(url))' is not a postgres:// URL")
        }
        guard let host = components.host, !host.isEmpty else {
            throw invalid("'\(redacted(url))' names no host")
        }
        let database = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        let mode = components.queryItems?.first(where: { $0.name == "sslmode" })?.value ?? "disable"
        let rootCertificate = components.queryItems?.first(where: { $0.name == "sslrootcert" })?.value
        guard let security = TransportSecurity(mode: mode, rootCertificate: rootCertificate) else {
            throw invalid(
                "unknown sslmode '\(mode)' in '\(redacted(url))' (use disable, allow, prefer, require, verify-ca or verify-full)"
            )
        }
        let tls: PostgresClient.Configuration.TLS
        switch security.policy {
        case .disable: tls = .disable
        case .prefer: tls = .prefer(security.tlsConfiguration)
        case .require: tls = .require(security.tlsConfiguration)
        }
        return PostgresClient.Configuration(
            host: host,
            port: components.port ?? 5432,
            username: components.user?.removingPercentEncoding ?? "postgres",
            password: components.password?.removingPercentEncoding,
            database: database.isEmpty ? nil : database,
            tls: tls
        )
    }

    /// What libpq's `sslmode` asks of the connection, with the certificate checks it implies.
    struct TransportSecurity {
        enum Policy { case disable, prefer, require }

        var policy: Policy
        /// How the server's certificate is checked: not at all (`allow`, `prefer`, `require`),
        /// its chain (`verify-ca`), its chain and host name (`verify-full`).
        var verification: CertificateVerification
        /// Where trusted roots come from: `sslrootcert`'s file, else the system's.
        var trustRoots: NIOSSLTrustRoots

        /// The security `mode` names, or `nil` for a mode libpq does not have. As in libpq,
        /// `require` with a root certificate checks the chain, as `verify-ca` does.
        init?(mode: String, rootCertificate: String?) {
            trustRoots = rootCertificate.map { .file($0) } ?? .default
            switch mode {
            case "disable": (policy, verification) = (.disable, .none)
            case "allow", "prefer": (policy, verification) = (.prefer, .none)
            case "require":
                (policy, verification) = (.require, rootCertificate == nil ? .none : .noHostnameVerification)
            case "verify-ca": (policy, verification) = (.require, .noHostnameVerification)
            case "verify-full": (policy, verification) = (.require, .fullVerification)
            default: return nil
            }
        }

        var tlsConfiguration: TLSConfiguration {
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.certificateVerification = verification
            configuration.trustRoots = trustRoots
            return configuration
        }
    }
}
#endif
