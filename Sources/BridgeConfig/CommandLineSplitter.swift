/// Splits a command line the way a POSIX shell would for simple cases: whitespace separates
/// words; single quotes keep text literally; double quotes keep spaces and allow `\"` and `\\`;
/// a backslash outside quotes escapes the next character.
///
/// No variables, globs or pipes.
public enum CommandLineSplitter {
    /// The words of `line`.
    /// - Throws: ``ConfigError/agentCommand(_:)`` for an unterminated quote.
    public static func split(_ line: String) throws(ConfigError) -> [String] {
        var words: [String] = []
        var current = ""
        var inWord = false
        var iterator = line.makeIterator()
        while let character = iterator.next() {
            switch character {
            case "'":
                inWord = true
                var closed = false
                while let next = iterator.next() {
                    if next == "'" {
                        closed = true
                        break
                    }
                    current.append(next)
                }
                guard closed else { throw .agentCommand("unterminated single quote in \(line)") }
            case "\"":
                inWord = true
                var closed = false
                while let next = iterator.next() {
                    if next == "\"" {
                        closed = true
                        break
                    }
                    if next == "\\", let escaped = iterator.next() {
                        if escaped != "\"" && escaped != "\\" { current.append("\\") }
                        current.append(escaped)
                        continue
                    }
                    current.append(next)
                }
                guard closed else { throw .agentCommand("unterminated double quote in \(line)") }
            case "\\":
                inWord = true
                if let escaped = iterator.next() { current.append(escaped) }
            case " ", "\t", "\n":
                if inWord {
                    words.append(current)
                    current = ""
                    inWord = false
                }
            default:
                inWord = true
                current.append(character)
            }
        }
        if inWord { words.append(current) }
        return words
    }
}
