import Foundation

/// A permission request put to a person at a terminal: the options numbered and labelled by what their `kind` does
/// (whatever the agent named them), and the person's answer read back into an option id.
///
/// ```swift
/// let question = PermissionQuestion(request)
/// print(question.text)                       // [permission] Tell the time
///                                            //   1) Allow once  2) Reject    (agent: "Allow once", "Reject")
/// let optionID = question.answer(readLine())  // "1" → "allow"; "" or EOF → the first reject option
/// ```
public struct PermissionQuestion: Sendable {
    /// The request asked about.
    public let request: BridgeAgentClient.PermissionRequest

    /// A question for `request`.
    public init(_ request: BridgeAgentClient.PermissionRequest) {
        self.request = request
    }

    /// What a `kind` does, as the web app labels it too; `nil` for a kind this client does not know.
    public static func label(kind: String) -> String? {
        switch kind {
        case "allow_once": "Allow once"
        case "allow_always": "Always allow"
        case "reject_once": "Reject"
        case "reject_always": "Always reject"
        default: nil
        }
    }

    /// The question, escaped for a terminal: the tool's title, then one numbered choice per option, then what Enter does.
    public var text: String {
        var lines = ["[permission] the agent asks to: \(TerminalText.escapedLine(request.title))"]
        for (index, option) in request.options.enumerated() {
            let label = PermissionQuestion.label(kind: option.kind) ?? "Unknown kind '\(TerminalText.escapedLine(option.kind))'"
            lines.append("  \(index + 1)) \(label)  (the agent calls it \"\(TerminalText.escapedLine(option.name))\")")
        }
        let fallback = defaultOption.map { "\(($0.index) + 1)" } ?? "cancel"
        lines.append("choose 1-\(request.options.count) (Enter: \(fallback)): ")
        return lines.joined(separator: "\n")
    }

    /// The safe default: the first reject option (or none, which cancels the request).
    var defaultOption: (index: Int, id: String)? {
        request.options.enumerated().first { $0.element.kind.hasPrefix("reject") }.map { ($0.offset, $0.element.id) }
    }

    /// The option chosen by `line` (a number, or the start of a label such as `a`/`allow`, `always`, `r`/`reject`);
    /// an empty line or end of input picks `defaultOption`; `nil` cancels.
    ///
    /// Anything else is not an answer: `.invalid`.
    public func answer(_ line: String?) -> Answer {
        guard let line else { return .chosen(defaultOption?.id) }
        let text = line.trimmingCharacters(in: .whitespaces).lowercased()
        if text.isEmpty { return .chosen(defaultOption?.id) }
        if let number = Int(text), (1...request.options.count).contains(number) {
            return .chosen(request.options[number - 1].id)
        }
        let wanted: String? = switch text {
        case "a", "allow", "y", "yes", "once": "allow_once"
        case "w", "always", "allow always": "allow_always"
        case "r", "reject", "n", "no": "reject_once"
        case "never", "always reject", "reject always": "reject_always"
        default: nil
        }
        if let wanted, let option = request.options.first(where: { $0.kind == wanted }) { return .chosen(option.id) }
        return .invalid
    }

    /// What a line answered.
    public enum Answer: Sendable, Equatable {
        /// This option id (`nil`: cancel the request).
        case chosen(String?)
        /// Not an answer; ask again.
        case invalid
    }
}
