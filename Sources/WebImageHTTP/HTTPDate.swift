import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// HTTP's dates (RFC 9110 §5.6.7), always in English and GMT whatever the process's locale.
/// Writes IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`); reads it and the two obsolete forms a
/// recipient must accept: RFC 850 (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime
/// (`Sun Nov  6 08:49:37 1994`).
package enum HTTPDate {
    private static let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// The date `text` names in any of the three forms; `nil` for anything else.
    package static func parse(_ text: String) -> Date? {
        if let date = fixdate(text) { return date }
        let parts = text.split(separator: " ")
        switch parts.count {
        case 6 where parts[5] == "GMT":  // IMF-fixdate
            return date(day: parts[1], month: parts[2], year: parts[3], clock: parts[4])
        case 4 where parts[3] == "GMT":  // RFC 850: two-digit year, the 50-year rule of §5.6.7
            let fields = parts[1].split(separator: "-")
            guard fields.count == 3, fields[2].count == 2, let short = Int(fields[2]) else { return nil }
            let thisYear = Calendar(identifier: .gregorian).component(.year, from: Date())
            var year = thisYear / 100 * 100 + short
            if year > thisYear + 50 { year -= 100 }
            return date(day: fields[0], month: fields[1], year: Substring(String(year)), clock: parts[2])
        case 5:  // asctime
            return date(day: parts[2], month: parts[1], year: parts[4], clock: parts[3])
        default:
            return nil
        }
    }

    /// `date` as an IMF-fixdate.
    package static func string(from date: Date) -> String {
        let parts = gmtFields(date)
        return
            "\(days[Int(parts.tm_wday)]), \(twoDigits(parts.tm_mday)) \(months[Int(parts.tm_mon)]) "
            + "\(parts.tm_year + 1900) \(twoDigits(parts.tm_hour)):\(twoDigits(parts.tm_min)):"
            + "\(twoDigits(parts.tm_sec)) GMT"
    }

    /// `date`'s calendar fields in GMT (whole seconds).
    package static func gmtFields(_ date: Date) -> tm {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return parts
    }

    /// `value` in at least two digits.
    package static func twoDigits(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }

    /// IMF-fixdate, the form servers send, read at its fixed offsets without allocating:
    /// `Sun, 06 Nov 1994 08:49:37 GMT`.
    private static func fixdate(_ text: String) -> Date? {
        var text = text
        return text.withUTF8 { bytes -> Date? in
            guard bytes.count == 29, bytes[3] == 0x2C, bytes[4] == 0x20, bytes[7] == 0x20, bytes[11] == 0x20,
                bytes[16] == 0x20, bytes[19] == 0x3A, bytes[22] == 0x3A, bytes[25] == 0x20, bytes[26] == 0x47,
                bytes[27] == 0x4D, bytes[28] == 0x54
            else { return nil }
            func number(_ range: Range<Int>) -> Int? {
                var value = 0
                for index in range {
                    guard (0x30...0x39).contains(bytes[index]) else { return nil }
                    value = value * 10 + Int(bytes[index] - 0x30)
                }
                return value
            }
            guard let day = number(5..<7), let year = number(12..<16), let hour = number(17..<19),
                let minute = number(20..<22), let second = number(23..<25),
                let month = monthBytes.firstIndex(where: { $0 == (bytes[8], bytes[9], bytes[10]) }),
                (1...31).contains(day), year >= 1900, hour < 24, minute < 60, second <= 60
            else { return nil }
            let days = daysSinceEpoch(year: year, month: month + 1, day: day)
            return Date(timeIntervalSince1970: TimeInterval(days * 86_400 + hour * 3600 + minute * 60 + second))
        }
    }

    private static let monthBytes: [(UInt8, UInt8, UInt8)] = months.map {
        let bytes = Array($0.utf8)
        return (bytes[0], bytes[1], bytes[2])
    }

    /// Days from 1970-01-01 to a date of the proleptic Gregorian calendar (Howard Hinnant's
    /// `days_from_civil`).
    private static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int {
        let shifted = month <= 2 ? year - 1 : year
        let era = (shifted >= 0 ? shifted : shifted - 399) / 400
        let yearOfEra = shifted - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static func date(day: Substring, month: Substring, year: Substring, clock: Substring) -> Date? {
        guard let day = Int(day), (1...31).contains(day), let year = Int(year), year >= 1900,
            let month = months.firstIndex(of: String(month))
        else { return nil }
        let time = clock.split(separator: ":").compactMap { Int($0) }
        guard time.count == 3, (0..<24).contains(time[0]), (0..<60).contains(time[1]), (0...60).contains(time[2])
        else { return nil }
        var fields = tm()
        fields.tm_year = Int32(year - 1900)
        fields.tm_mon = Int32(month)
        fields.tm_mday = Int32(day)
        fields.tm_hour = Int32(time[0])
        fields.tm_min = Int32(time[1])
        fields.tm_sec = Int32(time[2])
        return Date(timeIntervalSince1970: TimeInterval(timegm(&fields)))
    }
}
