import Foundation

/// Parses an HTTP date (RFC 9110, section 5.6.7) in the preferred IMF-fixdate form
/// ("Sun, 06 Nov 1994 08:49:37 GMT") or the obsolete RFC 850 ("Sunday, 06-Nov-94 08:49:37 GMT")
/// and asctime ("Sun Nov  6 08:49:37 1994") forms; returns `nil` for anything else, such as
/// `Expires: 0`.
///
/// A hand-written reader rather than a `DateFormatter`: it allocates nothing, needs no locale,
/// and any thread may call it. The day-of-week name is checked for form but not against the date.
func parseHTTPDate(_ text: String) -> Date? {
    var reader = HTTPDateReader(Array(text.utf8))
    reader.skipSpaces()
    guard let weekday = reader.letters(), weekday.count >= 3 else { return nil }
    let date: (year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int)?
    if reader.take(",") {
        reader.skipSpaces()
        guard let day = reader.number(digits: 1...2) else { return nil }
        if reader.take("-") {
            // RFC 850: dd-Mon-yy HH:mm:ss GMT, with a two-digit year read as RFC 9110 says.
            guard let month = reader.month(), reader.take("-"), let shortYear = reader.number(digits: 2...2),
                reader.take(" "), let time = reader.time(), reader.take(" "), reader.word("GMT")
            else { return nil }
            date = (shortYear < 70 ? 2000 + shortYear : 1900 + shortYear, month, day, time.0, time.1, time.2)
        } else {
            // IMF-fixdate: dd Mon yyyy HH:mm:ss GMT.
            guard reader.take(" "), let month = reader.month(), reader.take(" "),
                let year = reader.number(digits: 4...4), reader.take(" "), let time = reader.time(),
                reader.take(" "), reader.word("GMT")
            else { return nil }
            date = (year, month, day, time.0, time.1, time.2)
        }
    } else {
        // asctime: Mon _d HH:mm:ss yyyy.
        guard reader.take(" "), let month = reader.month(), reader.take(" ") else { return nil }
        reader.skipSpaces()
        guard let day = reader.number(digits: 1...2), reader.take(" "), let time = reader.time(),
            reader.take(" "), let year = reader.number(digits: 4...4)
        else { return nil }
        date = (year, month, day, time.0, time.1, time.2)
    }
    reader.skipSpaces()
    guard reader.isAtEnd, let date, (1...31).contains(date.day), date.hour < 24, date.minute < 60,
        date.second < 61
    else { return nil }
    let days = daysFromCivil(year: date.year, month: date.month, day: date.day)
    let seconds = ((days * 24 + date.hour) * 60 + date.minute) * 60 + date.second
    return Date(timeIntervalSince1970: TimeInterval(seconds))
}

/// Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
private func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
    let year = month <= 2 ? year - 1 : year
    let era = (year >= 0 ? year : year - 399) / 400
    let yearOfEra = year - era * 400
    let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
    let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
    return era * 146_097 + dayOfEra - 719_468
}

/// Reads an HTTP date's ASCII bytes from left to right.
private struct HTTPDateReader {
    private let bytes: [UInt8]
    private var index = 0

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    var isAtEnd: Bool { index == bytes.count }

    mutating func skipSpaces() {
        while index < bytes.count, bytes[index] == 0x20 { index += 1 }
    }

    mutating func take(_ character: Unicode.Scalar) -> Bool {
        guard index < bytes.count, bytes[index] == UInt8(ascii: character) else { return false }
        index += 1
        return true
    }

    mutating func letters() -> ArraySlice<UInt8>? {
        let start = index
        while index < bytes.count, (0x41...0x5A).contains(bytes[index] & ~0x20) { index += 1 }
        return index > start ? bytes[start..<index] : nil
    }

    mutating func word(_ expected: String) -> Bool {
        guard let word = letters() else { return false }
        return word.elementsEqual(expected.utf8)
    }

    mutating func number(digits: ClosedRange<Int>) -> Int? {
        var value = 0
        var count = 0
        while index < bytes.count, (0x30...0x39).contains(bytes[index]), count < digits.upperBound {
            value = value * 10 + Int(bytes[index] - 0x30)
            index += 1
            count += 1
        }
        return digits.contains(count) ? value : nil
    }

    mutating func month() -> Int? {
        guard let name = letters(), name.count == 3 else { return nil }
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        return months.firstIndex { $0.utf8.elementsEqual(name) }.map { $0 + 1 }
    }

    mutating func time() -> (Int, Int, Int)? {
        guard let hour = number(digits: 2...2), take(":"), let minute = number(digits: 2...2), take(":"),
            let second = number(digits: 2...2)
        else { return nil }
        return (hour, minute, second)
    }
}
