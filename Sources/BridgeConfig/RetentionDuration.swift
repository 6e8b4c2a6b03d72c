import Foundation

/// The text of `idle-session-timeout` (the retention of idle sessions): whole seconds, or a number with a unit
/// (`90s`, `30m`, `24h`, `7d`); `0`, `off` or `never` for no time limit (0 seconds).
public enum RetentionDuration {
    /// The seconds `text` stands for, 0 for no limit; `nil` when it does not parse.
    public static func seconds(_ text: String) -> Int? {
        let trimmed = text.trimmingCharacters(in: .whitespaces).lowercased()
        if trimmed == "off" || trimmed == "never" { return 0 }
        let units: [(Character, Int)] = [("s", 1), ("m", 60), ("h", 3600), ("d", 86_400)]
        var number = Substring(trimmed)
        var scale = 1
        if let last = number.last, let unit = units.first(where: { $0.0 == last }) {
            number = number.dropLast()
            scale = unit.1
        }
        guard let value = Int(number), value >= 0 else { return nil }
        let (seconds, overflow) = value.multipliedReportingOverflow(by: scale)
        return overflow ? nil : seconds
    }

    /// `seconds` as `config show` prints it: `off` for 0, else in the largest unit that divides it (`24h`).
    public static func text(_ seconds: Int) -> String {
        guard seconds > 0 else { return "off" }
        for (unit, scale) in [("d", 86_400), ("h", 3600), ("m", 60)] where seconds % scale == 0 {
            return "\(seconds / scale)\(unit)"
        }
        return "\(seconds)s"
    }
}
