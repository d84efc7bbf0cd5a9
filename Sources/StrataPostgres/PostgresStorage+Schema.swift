#if Postgres
import Foundation
import Logging
import NIOCore
import PostgresNIO
import Strata

extension PostgresStorage {
    // MARK: Schema

    /// Fails with `notFound` unless the table exists.
    func requireTable() async throws(StorageError) {
        let table = table
        let exists = try await performPrepared("cannot look for the table \(table)", key: nil) { connection in
            let rows = try await connection.query("SELECT to_regclass(\(table)) IS NOT NULL", logger: Self.logger)
            for try await exists in rows.decode(Bool.self) { return exists }
            return false
        }
        guard exists else {
            throw StorageError(
                .notFound,
                storage: name,
                message: "there is no table \(table) at \(server): nothing was read or created"
            )
        }
    }

    func createTable() async throws(StorageError) {
        let table = table
        let channel = channel
        try await performPrepared("cannot create the table \(table)", key: nil) { connection in
            // The whole schema in one round trip (see `changeSchema(of:statements:logger:)`). The
            // names are a valid table name and the channel made from it, never a user's text.
            try await connection.changeSchema(
                of: table,
                statements: [
                    """
                    CREATE TABLE IF NOT EXISTS \(table) (
                        digest BYTEA PRIMARY KEY,
                        key BYTEA NOT NULL,
                        value BYTEA NOT NULL,
                        expiry DOUBLE PRECISION
                    )
                    """,
                    """
                    CREATE INDEX IF NOT EXISTS \(table)_expiry ON \(table) (expiry)
                    WHERE expiry IS NOT NULL
                    """,
                    // Announces each change as "<application_name> <kind><base64 key>": `s` for a
                    // value set, `r` removed, `x` removed once expired (the storage's own clock,
                    // `strata.now`, which its sweeps set for their transaction, says so), `c`
                    // cleared by TRUNCATE. A TRUNCATE also sends "<name> *" first, and a key too long
                    // for a notification's 8000 bytes sends only "<name> *": every key.
                    """
                    CREATE OR REPLACE FUNCTION \(table)_notify() RETURNS trigger
                    LANGUAGE plpgsql AS $$
                    DECLARE
                        changed BYTEA;
                        kind TEXT;
                        sender TEXT := coalesce(current_setting('application_name', true), '');
                    BEGIN
                        IF TG_OP = 'TRUNCATE' THEN
                            PERFORM pg_notify('\(channel)', sender || ' *');
                            PERFORM pg_notify('\(channel)', sender || ' c' || encode(key, 'base64'))
                            FROM \(table) WHERE octet_length(key) <= 5000;
                            RETURN NULL;
                        END IF;
                        IF TG_OP = 'DELETE' THEN
                            changed := OLD.key;
                            IF OLD.expiry <= nullif(current_setting('strata.now', true), '')::double precision THEN
                                kind := 'x';
                            ELSE
                                kind := 'r';
                            END IF;
                        ELSE
                            changed := NEW.key;
                            kind := 's';
                        END IF;
                        IF octet_length(changed) > 5000 THEN
                            PERFORM pg_notify('\(channel)', sender || ' *');
                        ELSE
                            PERFORM pg_notify('\(channel)', sender || ' ' || kind || encode(changed, 'base64'));
                        END IF;
                        RETURN NULL;
                    END
                    $$
                    """,
                    """
                    CREATE OR REPLACE TRIGGER \(table)_changed
                    AFTER INSERT OR UPDATE OR DELETE ON \(table)
                    FOR EACH ROW EXECUTE FUNCTION \(table)_notify()
                    """,
                    // Before the rows go, so that the trigger can name them.
                    "DROP TRIGGER IF EXISTS \(table)_truncated ON \(table)",
                    """
                    CREATE OR REPLACE TRIGGER \(table)_cleared
                    BEFORE TRUNCATE ON \(table)
                    FOR EACH STATEMENT EXECUTE FUNCTION \(table)_notify()
                    """,
                ],
                logger: Self.logger
            )
        }
    }
}
#endif
