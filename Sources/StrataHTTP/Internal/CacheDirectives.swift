import Foundation

/// What an answer's `Cache-Control` (RFC 9111, section 5.2.2) lets a private cache do, parsed
/// from the header's text. A pure value.
struct CacheDirectives: Equatable {
    /// `no-store`: the answer must not be stored at all.
    var noStore = false
    /// `no-cache` (with or without field names): the answer may be stored but must be revalidated
    /// before every use.
    var noCache = false
    /// `max-age` in seconds; 0 when the directive's value is invalid, which makes the answer stale.
    var maximumAge: Int?

    /// Parses the comma-separated directives in `text` (several header lines joined with commas).
    /// Unknown directives are ignored; a repeated `max-age` keeps the smallest.
    init(_ text: String?) {
        guard let text else { return }
        for directive in Self.split(text) {
            let parts = directive.split(separator: "=", maxSplits: 1)
            guard let rawName = parts.first else { continue }
            let name = rawName.trimmingCharacters(in: .whitespaces).lowercased()
            let value = parts.count > 1 ? Self.unquoted(parts[1]) : nil
            switch name {
            case "no-store":
                noStore = true
            case "no-cache":
                noCache = true
            case "max-age":
                let seconds = value.flatMap { Int($0) }.map { max($0, 0) } ?? 0
                maximumAge = min(maximumAge ?? seconds, seconds)
            default:
                continue
            }
        }
    }

    /// Splits at commas outside quoted strings, dropping empty pieces.
    private static func split(_ text: String) -> [Substring] {
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

/// Parses an HTTP date in the preferred IMF-fixdate form ("Sun, 06 Nov 1994 08:49:37 GMT") or the
/// obsolete RFC 850 and asctime forms; returns `nil` for anything else, such as `Expires: 0`.
func parseHTTPDate(_ text: String) -> Date? {
    let formats = ["EEE, dd MMM yyyy HH:mm:ss zzz", "EEEE, dd-MMM-yy HH:mm:ss zzz", "EEE MMM d HH:mm:ss yyyy"]
    let formatter = DateFormatter()
    formatter.locale = Locale(identifier: "en_US_POSIX")
    formatter.timeZone = TimeZone(identifier: "GMT")
    for format in formats {
        formatter.dateFormat = format
        if let date = formatter.date(from: text.trimmingCharacters(in: .whitespaces)) {
            return date
        }
    }
    return nil
}
