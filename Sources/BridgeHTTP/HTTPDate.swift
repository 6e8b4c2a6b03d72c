package import Foundation

/// The `Date` header's text (RFC 9110 §5.6.7, IMF-fixdate), for example `Sun, 06 Nov 1994 08:49:37 GMT`.
package enum HTTPDate {
    private static let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// `date` as an IMF-fixdate, in GMT, to the second.
    package static func string(from date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "GMT") ?? calendar.timeZone
        let parts = calendar.dateComponents([.weekday, .day, .month, .year, .hour, .minute, .second], from: date)
        let weekday = weekdays[((parts.weekday ?? 1) - 1 + 7) % 7]
        let month = months[((parts.month ?? 1) - 1 + 12) % 12]
        func two(_ value: Int?) -> String { value.map { $0 < 10 ? "0\($0)" : "\($0)" } ?? "00" }
        let year = String(parts.year ?? 1970)
        return "\(weekday), \(two(parts.day)) \(month) \(year) \(two(parts.hour)):\(two(parts.minute)):\(two(parts.second)) GMT"
    }
}
