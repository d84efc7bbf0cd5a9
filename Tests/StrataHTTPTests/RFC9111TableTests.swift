import Foundation
import StrataTestSupport
import Testing

/// The RFC 9111 table in the StrataHTTP catalog names, for each requirement, the tests that show
/// it: each must be a test of this target, so that the table cannot point at nothing.
@Suite struct RFC9111TableTests {
    @Test func everyTestTheTableNamesExists() throws {
        let root = repositoryRoot()
        let table = try String(
            contentsOf: root.appendingPathComponent("Sources/StrataHTTP/StrataHTTP.docc/RFC9111.md"),
            encoding: .utf8
        )
        let folder = root.appendingPathComponent("Tests/StrataHTTPTests")
        let files = FileManager.default.enumerator(atPath: folder.path)?.compactMap { $0 as? String } ?? []
        let sources = try files.filter { $0.hasSuffix(".swift") }
            .map { try String(contentsOf: folder.appendingPathComponent($0), encoding: .utf8) }
            .joined(separator: "\n")
        let rows = table.components(separatedBy: "\n").filter { $0.hasPrefix("| ") && !$0.hasPrefix("| Requirement") }
        var named: [String] = []
        for row in rows {
            let cells = row.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard let last = cells.last else { continue }
            named += last.matches(of: /`(\w+)`/).map { String($0.1) }
        }

        #expect(rows.count >= 30)
        #expect(named.count >= 40)
        for name in named {
            let exists = sources.contains("func \(name)(")
            #expect(exists, "RFC9111.md names \(name), which is no test")
        }
    }
}
