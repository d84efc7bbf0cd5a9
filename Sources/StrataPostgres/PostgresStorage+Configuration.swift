import Foundation
import NIOCore
import NIOSSL
public import PostgresNIO
public import Strata

extension PostgresStorage {
    // MARK: Configuration

    package static func isValidTableName(_ name: String) -> Bool {
        guard let first = name.utf8.first, name.utf8.count <= 48 else { return false }
        let isLetter = { (byte: UInt8) in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || byte == UInt8(ascii: "_")
        }
        return isLetter(first)
            && name.utf8.allSatisfy { isLetter($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
    }

    /// Parses a `postgres://` URL into a client configuration.
    public static func configuration(from url: String) throws(StorageError) -> PostgresClient.Configuration {
        func invalid(_ message: String) -> StorageError {
            StorageError(.invalidConfiguration, storage: "PostgresStorage", message: message)
        }
        guard let components = URLComponents(string: url),
            components.scheme == "postgres" || components.scheme == "postgresql"
        else {
            throw invalid("'\(url)' is not a postgres:// URL")
        }
        guard let host = components.host, !host.isEmpty else {
            throw invalid("'\(url)' names no host")
        }
        let database = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        let mode = components.queryItems?.first(where: { $0.name == "sslmode" })?.value ?? "disable"
        let rootCertificate = components.queryItems?.first(where: { $0.name == "sslrootcert" })?.value
        guard let security = TransportSecurity(mode: mode, rootCertificate: rootCertificate) else {
            throw invalid(
                "unknown sslmode '\(mode)' in '\(url)' (use disable, allow, prefer, require, verify-ca or verify-full)"
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
