#if Postgres
import Foundation
import Logging
import PostgresNIO
import Strata
import StrataTestSupport
import Testing

@testable import StrataPostgres

/// `sslmode` means what it means to libpq, against a server of the test's own that offers TLS
/// under a self-signed certificate for `localhost` (scripts/postgres.sh makes it).
@Suite struct PostgresTLSTests {
    /// Whether the connection the storage's query runs on is encrypted, as the server sees it.
    private static func isEncrypted(_ storage: PostgresStorage) async throws -> Bool {
        let rows = try await storage.client.query("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
        for try await ssl in rows.decode(Bool.self) { return ssl }
        return false
    }

    private static func open(_ url: String, logger: Logger? = nil) async throws(StorageError) -> PostgresStorage {
        var options = PostgresStorage.Options()
        options.operationTimeout = .seconds(3)
        options.connectTimeout = .seconds(2)
        options.logger = logger
        return try await PostgresStorage(url: url, options: options)
    }

    @Test func eachModeEncryptsAndChecksTheCertificateAsLibpqDoes() async throws {
        try await PrivateServer.with { server in
            let root = server.folder + "/root.crt"
            let byAddress = server.url
            let byName = server.url.replacingOccurrences(of: "127.0.0.1", with: "localhost")

            let plain = try await Self.open(byAddress + "?sslmode=disable")
            let preferred = try await Self.open(byAddress + "?sslmode=prefer")
            let required = try await Self.open(byAddress + "?sslmode=require")
            let chainChecked = try await Self.open(byAddress + "?sslmode=verify-ca&sslrootcert=\(root)")
            let fullyChecked = try await Self.open(byName + "?sslmode=verify-full&sslrootcert=\(root)")
            try await fullyChecked.set(Data("over TLS".utf8), forKey: "k")

            #expect(try await !Self.isEncrypted(plain))
            #expect(try await Self.isEncrypted(preferred))
            #expect(try await Self.isEncrypted(required), "require encrypts without checking the certificate")
            #expect(try await Self.isEncrypted(chainChecked))
            #expect(try await Self.isEncrypted(fullyChecked))
            #expect(try await required.value(forKey: "k") == Data("over TLS".utf8))
            for storage in [plain, preferred, required, chainChecked, fullyChecked] { await storage.close() }

            // The certificate names localhost, not 127.0.0.1; the system does not trust it.
            let (logger, records) = RecordingLogHandler.logger(level: .debug)
            let wrongHost = await #expect(throws: StorageError.self) {
                try await Self.open(byAddress + "?sslmode=verify-full&sslrootcert=\(root)", logger: logger)
            }
            let untrusted = await #expect(throws: StorageError.self) {
                try await Self.open(byName + "?sslmode=verify-ca")
            }
            #expect(wrongHost?.code == .io, "\(String(describing: wrongHost))")
            #expect(untrusted?.code == .io, "\(String(describing: untrusted))")
            // postgres-nio's own account of the failed connections reached the storage's logger.
            #expect(!records.entries.isEmpty, "postgres-nio logged nothing to the storage's logger")
            print(
                "PostgresTLSTests: \(records.entries.count) postgres-nio messages, e.g. \(records.entries.first.map { "\($0.level) \($0.message)" } ?? "none")"
            )
        }
    }

    @Test func aModeLibpqDoesNotHaveIsAnInvalidConfiguration() {
        let error = #expect(throws: StorageError.self) {
            try PostgresStorage.configuration(from: "postgres://postgres@127.0.0.1/strata?sslmode=verify")
        }

        #expect(error?.code == .invalidConfiguration)
        #expect(error?.message.contains("verify-full") == true, "\(String(describing: error))")
    }

    @Test func requireChecksTheChainOnlyWhenGivenARootCertificate() throws {
        let withoutRoot = try #require(PostgresStorage.TransportSecurity(mode: "require", rootCertificate: nil))
        let withRoot = try #require(PostgresStorage.TransportSecurity(mode: "require", rootCertificate: "/roots.pem"))
        let preferred = try #require(PostgresStorage.TransportSecurity(mode: "prefer", rootCertificate: nil))
        let full = try #require(PostgresStorage.TransportSecurity(mode: "verify-full", rootCertificate: nil))

        #expect("\(withoutRoot.verification)".hasPrefix("none"))
        #expect("\(withRoot.verification)" == "noHostnameVerification")
        #expect("\(preferred.verification)".hasPrefix("none"))
        #expect("\(full.verification)" == "fullVerification")
        #expect(PostgresStorage.TransportSecurity(mode: "verify", rootCertificate: nil) == nil)
    }
}
#endif
