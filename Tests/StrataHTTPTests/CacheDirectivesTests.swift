import Foundation
import HTTPTypes
import Strata
import StrataTestSupport
import Testing

@testable import StrataHTTP

@Suite(.onTestThreads) struct CacheDirectivesTests {
    @Test(
        arguments: [
            ("max-age=60", CacheDirectives { $0.maximumAge = 60 }),
            (
                "MAX-AGE=60, No-Store",
                CacheDirectives {
                    $0.noStore = true
                    $0.maximumAge = 60
                }
            ),
            (
                "public, max-age=\"30\"",
                CacheDirectives {
                    $0.isPublic = true
                    $0.maximumAge = 30
                }
            ),
            (
                "no-cache=\"Set-Cookie, Vary\", max-age=5",
                CacheDirectives {
                    $0.noCache = true
                    $0.maximumAge = 5
                }
            ),
            ("max-age=60, max-age=10", CacheDirectives { $0.maximumAge = 10 }),
            ("max-age=soon", CacheDirectives { $0.maximumAge = 0 }),
            ("max-age=-5", CacheDirectives { $0.maximumAge = 0 }),
            ("max-age=1.5", CacheDirectives { $0.maximumAge = 0 }),
            ("max-age=", CacheDirectives { $0.maximumAge = 0 }),
            ("max-age=99999999999999999999999", CacheDirectives { $0.maximumAge = 2_147_483_648 }),
            ("max-age=2147483649", CacheDirectives { $0.maximumAge = 2_147_483_648 }),
            ("max-age=2147483647", CacheDirectives { $0.maximumAge = 2_147_483_647 }),
            (" , ,private", CacheDirectives { $0.isPrivate = true }),
            ("private=\"Set-Cookie\"", CacheDirectives { $0.isPrivate = true }),
            (
                "s-maxage=20, proxy-revalidate, must-revalidate",
                CacheDirectives {
                    $0.sharedMaximumAge = 20
                    $0.proxyRevalidate = true
                    $0.mustRevalidate = true
                }
            ),
            (
                "stale-while-revalidate=30, stale-if-error=86400",
                CacheDirectives {
                    $0.staleWhileRevalidate = 30
                    $0.staleIfError = 86400
                }
            ),
            ("=, ==, \"unclosed, max-age=5", CacheDirectives { _ in }),
            ("", CacheDirectives { _ in }),
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
            ("  Thu, 01 Jan 1970 00:00:00 GMT  ", 0.0),
            ("Tue, 29 Feb 2028 23:59:59 GMT", 1_835_481_599.0),
            ("Wednesday, 01-Jan-25 00:00:00 GMT", 1_735_689_600.0),
        ]
    )
    func httpDatesInEveryAllowedFormAreRead(text: String, secondsSince1970: Double) {
        #expect(parseHTTPDate(text)?.timeIntervalSince1970 == secondsSince1970)
    }

    @Test(
        arguments: [
            "0", "-1", "yesterday", "", "Sun, 06 Nov 1994 08:49:37 PST", "Sun, 32 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 25:49:37 GMT", "Sun, 06 Nov 1994 08:60:37 GMT", "Sun, 06 Foo 1994 08:49:37 GMT",
            "Sun, 06 Nov 94 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:37 GMT trailing", "Sun 06 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 8:49:37 GMT",
        ]
    )
    func anInvalidDateReadsAsNone(text: String) {
        #expect(parseHTTPDate(text) == nil)
    }

    @Test func theReaderAgreesWithAFormatterOnManyDates() {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let date = Date(
                timeIntervalSince1970: TimeInterval(Int.random(in: -2_000_000_000...8_000_000_000, using: &generator))
            )
            let text = formatter.string(from: date)
            #expect(parseHTTPDate(text) == date, "\(text)")
        }
    }

    @Test(
        arguments: [
            (500, true), (502, true), (503, true), (408, true), (429, true), (400, false), (401, false), (404, false),
        ]
    )
    func onlyServerErrorsTimeoutsAndRateLimitsAreTransient(status: Int, transient: Bool) {
        let failure = HTTPStatusError(url: URL(string: "http://example.com")!, status: status, reasonPhrase: "")
        let error = StorageError(.sourceFailed, storage: "HTTPSource", message: "", underlying: failure)
        #expect(error.isTransient == transient)
    }

    @Test func retryAfterIsReadAsSecondsOrAsADate() throws {
        func retryAfter(_ value: String) -> Duration? {
            HTTPStatusError(
                url: URL(string: "http://example.com")!,
                status: 429,
                reasonPhrase: "",
                headers: [.retryAfter: value]
            ).retryAfter
        }
        #expect(retryAfter("120") == .seconds(120))
        #expect(retryAfter(" 0 ") == .zero)
        #expect(retryAfter("soon") == nil)
        #expect(retryAfter("-5") == nil)
        #expect(retryAfter("Sun, 06 Nov 1994 08:49:37 GMT") == .zero)
        let later = try #require(retryAfter(HTTPDateText.format(Date().addingTimeInterval(600))))
        #expect(later > .seconds(590) && later <= .seconds(600))
    }
}

extension CacheDirectives {
    /// No directives, then `change` applied.
    init(_ change: (inout CacheDirectives) -> Void) {
        self.init(nil)
        change(&self)
    }
}

/// Writes IMF-fixdates for the tests.
enum HTTPDateText {
    static func format(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }
}
