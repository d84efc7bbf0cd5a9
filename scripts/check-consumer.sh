#!/usr/bin/env bash
# Checks what an app pays for Strata: makes a new package that depends on this checkout with the
# default traits and uses the app products (Strata, StrataObjects, StrataHTTP, StrataSQLite),
# resolves it, and fails if it resolves more than 5 packages besides Strata or any server package
# (SwiftNIO, swift-crypto, PostgresNIO, AsyncHTTPClient, Vapor, Hummingbird, ...). Then builds it
# from clean in debug and prints the time.
# Usage: scripts/check-consumer.sh [--no-build]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

build=1
for argument in "$@"; do
    case "$argument" in
    --no-build) build=0 ;;
    *) echo "unknown option: $argument" >&2; exit 2 ;;
    esac
done

maximum=5
forbidden=(swift-nio swift-nio-ssl swift-nio-http2 swift-nio-extras swift-nio-transport-services swift-crypto
    swift-certificates swift-asn1 postgres-nio async-http-client vapor hummingbird swift-service-lifecycle
    swift-distributed-tracing malloc-interposer)

consumer=$(mktemp -d)
trap 'rm -rf "$consumer"' EXIT
mkdir -p "$consumer/Sources/App"
cat >"$consumer/Package.swift" <<EOF
// swift-tools-version: 6.2
import PackageDescription

let package = Package(
    name: "App",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    dependencies: [.package(path: "$root")],
    targets: [
        .executableTarget(
            name: "App",
            dependencies: [
                .product(name: "Strata", package: "$(basename "$root")"),
                .product(name: "StrataObjects", package: "$(basename "$root")"),
                .product(name: "StrataHTTP", package: "$(basename "$root")"),
                .product(name: "StrataSQLite", package: "$(basename "$root")"),
            ]
        )
    ]
)
EOF
cat >"$consumer/Sources/App/main.swift" <<'EOF'
import Foundation
import Strata
import StrataHTTP
import StrataObjects
import StrataSQLite

struct Note: Codable, Identifiable, Sendable {
    var id: String
    var text: String
}

let folder = FileManager.default.temporaryDirectory.appendingPathComponent("strata-consumer-\(UUID().uuidString)")
defer { try? FileManager.default.removeItem(at: folder) }
let memory = try MemoryStorage<String, Note>(maximumCount: 100)
let disk = try DiskStorage(url: folder.appendingPathComponent("disk")).json(Note.self)
let notes = memory.combined(with: disk)
try await notes.set(Note(id: "a", text: "hello"), forKey: "a")
let database = try SQLiteStorage(path: folder.appendingPathComponent("values.sqlite").path)
try await database.set(Data("hello".utf8), forKey: "a")
let source = HTTPSource(transport: URLSessionTransport())
_ = source
print(try await notes.value(forKey: "a")?.text ?? "absent", try await database.value(forKey: "a")?.count ?? 0)
EOF

cd "$consumer"
echo "Resolving a consumer of Strata's app products (default traits) in $consumer"
swift package resolve >/dev/null
# flatlist prints the whole tree, a package once for each package that depends on it.
packages=$(swift package show-dependencies --format flatlist | tail -n +2 | sort -u)
count=$(printf '%s\n' "$packages" | grep -c . || true)
echo "Resolved $count packages besides Strata:"
printf '  %s\n' $packages
status=0
for name in "${forbidden[@]}"; do
    if printf '%s\n' "$packages" | grep -qx "$name"; then
        echo "error: an app that uses the default traits resolves $name" >&2
        status=1
    fi
done
if [ "$count" -gt "$maximum" ]; then
    echo "error: $count packages resolved, at most $maximum allowed" >&2
    status=1
fi
[ "$status" -eq 0 ] || exit "$status"

if [ "$build" = 1 ]; then
    start=$(date +%s)
    swift build >/dev/null
    end=$(date +%s)
    echo "Clean debug build of the consumer: $((end - start)) s"
    swift run App
fi
echo "The consumer check passed."
