import Foundation

/// What a `Cache-Control` header (RFC 9111, section 5.2) says, parsed from the header's text.
/// The same type reads a response's directives and a request's. A pure value.
struct CacheDirectives: Equatable {
    /// `no-store`: the response must not be stored at all.
    var noStore = false
    /// `no-cache` (with or without field names): the response may be stored but must be
    /// revalidated before every use.
    var noCache = false
    /// `max-age` in seconds; 0 when the directive's value is invalid, which makes the response stale.
    var maximumAge: Int?
    /// `s-maxage` in seconds: replaces `max-age` in a shared cache, and forbids it serving the
    /// response stale.
    var sharedMaximumAge: Int?
    /// `public`: a shared cache may store the response even when the request carried `Authorization`.
    var isPublic = false
    /// `private` (with or without field names): only a private cache may store the response.
    var isPrivate = false
    /// `must-revalidate`: once stale, the response must not be used without revalidating it.
    var mustRevalidate = false
    /// `proxy-revalidate`: `must-revalidate` for shared caches only.
    var proxyRevalidate = false
    /// `stale-while-revalidate` (RFC 5861) in seconds.
    var staleWhileRevalidate: Int?
    /// `stale-if-error` (RFC 5861) in seconds.
    var staleIfError: Int?
    /// A request's `min-fresh` in seconds: it wants a response that stays fresh at least this long.
    var minimumFreshness: Int?
    /// A request's `max-stale` in seconds: it accepts a response stale by up to this long;
    /// ``largestDeltaSeconds`` when the directive has no value (any staleness).
    var maximumStaleness: Int?
    /// A request's `only-if-cached`: it wants a stored response or none, never the origin's.
    var onlyIfCached = false

    /// The largest delta-seconds a cache keeps: RFC 9111, section 1.2.2, asks that larger values
    /// be read as 2^31.
    static let largestDeltaSeconds = 2_147_483_648

    /// Parses the comma-separated directives in `text` (several header lines joined with commas).
    /// Unknown directives are ignored; a repeated directive with seconds keeps the strictest: the
    /// smallest, and for `min-fresh` the largest.
    init(_ text: String?) {
        guard let text else { return }
        for directive in Self.split(text) {
            let parts = directive.split(separator: "=", maxSplits: 1)
            guard let rawName = parts.first else { continue }
            let name = rawName.trimmingCharacters(in: .whitespaces).lowercased()
            let value = parts.count > 1 ? Self.unquoted(parts[1]) : nil
            switch name {
            case "no-store": noStore = true
            case "no-cache": noCache = true
            case "public": isPublic = true
            case "private": isPrivate = true
            case "must-revalidate": mustRevalidate = true
            case "proxy-revalidate": proxyRevalidate = true
            case "max-age": maximumAge = Self.smaller(maximumAge, Self.seconds(value))
            case "s-maxage": sharedMaximumAge = Self.smaller(sharedMaximumAge, Self.seconds(value))
            case "stale-while-revalidate":
                staleWhileRevalidate = Self.smaller(staleWhileRevalidate, Self.seconds(value))
            case "stale-if-error": staleIfError = Self.smaller(staleIfError, Self.seconds(value))
            case "min-fresh": minimumFreshness = max(minimumFreshness ?? 0, Self.seconds(value))
            case "max-stale":
                let seconds = value.map { Self.seconds($0) } ?? Self.largestDeltaSeconds
                maximumStaleness = Self.smaller(maximumStaleness, seconds)
            case "only-if-cached": onlyIfCached = true
            default: continue
            }
        }
    }

    /// Reads delta-seconds (RFC 9111, section 1.2.2): digits only, clamped to 2^31; anything
    /// else (a sign, a fraction, a word, nothing) reads as 0, which makes the response stale.
    static func seconds(_ text: String?) -> Int {
        guard let text, !text.isEmpty, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return 0 }
        var seconds = 0
        for digit in text.utf8 {
            seconds = seconds * 10 + Int(digit - 0x30)
            if seconds >= largestDeltaSeconds { return largestDeltaSeconds }
        }
        return seconds
    }

    private static func smaller(_ current: Int?, _ new: Int) -> Int {
        min(current ?? new, new)
    }

    /// Splits at commas outside quoted strings, dropping empty pieces.
    static func split(_ text: String) -> [Substring] {
        var pieces: [Substring] = []
        var start = text.startIndex
        var inQuotes = false
        var index = text.startIndex
        while index < text.endIndex {
            let character = text[index]
            if character == "\"" {
                inQuotes.toggle()
            } else if character == ",", !inQuotes {
                pieces.append(text[start..<index])
                start = text.index(after: index)
            }
            index = text.index(after: index)
        }
        pieces.append(text[start...])
        return pieces.filter { !$0.allSatisfy(\.isWhitespace) }
    }

    private static func unquoted(_ value: Substring) -> String {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        guard trimmed.count >= 2, trimmed.hasPrefix("\""), trimmed.hasSuffix("\"") else { return trimmed }
        return String(trimmed.dropFirst().dropLast())
    }
}
