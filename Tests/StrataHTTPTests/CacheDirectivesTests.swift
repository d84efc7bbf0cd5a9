import Foundation
import Testing

@testable import StrataHTTP

@Suite struct CacheDirectivesTests {
    @Test(
        arguments: [
            ("max-age=60", CacheDirectives(noStore: false, noCache: false, maximumAge: 60)),
            ("MAX-AGE=60, No-Store", CacheDirectives(noStore: true, noCache: false, maximumAge: 60)),
            ("public, max-age=\"30\"", CacheDirectives(noStore: false, noCache: false, maximumAge: 30)),
            ("no-cache=\"Set-Cookie, Vary\", max-age=5", CacheDirectives(noStore: false, noCache: true, maximumAge: 5)),
            ("max-age=60, max-age=10", CacheDirectives(noStore: false, noCache: false, maximumAge: 10)),
            ("max-age=soon", CacheDirectives(noStore: false, noCache: false, maximumAge: 0)),
            ("max-age=-5", CacheDirectives(noStore: false, noCache: false, maximumAge: 0)),
            (" , ,private", CacheDirectives(noStore: false, noCache: false, maximumAge: nil)),
            ("", CacheDirectives(noStore: false, noCache: false, maximumAge: nil)),
        ]
    )
    func directivesAreParsedLikeACacheWould(text: String, expected: CacheDirectives) {
        #expect(CacheDirectives(text) == expected)
    }

    @Test(
        arguments: [
            ("Sun, 06 Nov 1994 08:49:37 GMT", 784_111_777.0),
            ("Sunday, 06-Nov-94 08:49:37 GMT", 784_111_777.0),
            ("Sun Nov  6 08:49:37 1994", 784_111_777.0),
        ]
    )
    func httpDatesInEveryAllowedFormAreRead(text: String, secondsSince1970: Double) {
        #expect(parseHTTPDate(text)?.timeIntervalSince1970 == secondsSince1970)
    }

    @Test(arguments: ["0", "-1", "yesterday", ""])
    func anInvalidDateReadsAsNone(text: String) {
        #expect(parseHTTPDate(text) == nil)
    }
}

extension CacheDirectives {
    init(noStore: Bool, noCache: Bool, maximumAge: Int?) {
        self.init(nil)
        self.noStore = noStore
        self.noCache = noCache
        self.maximumAge = maximumAge
    }
}
