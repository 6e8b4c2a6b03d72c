import Foundation

/// Text from the agent or the bridge made safe to write to a terminal: no byte of it can start an escape sequence.
///
/// Everything a bridge sends is untrusted: an agent's answer can hold `ESC ] 0 ;` (set the window title),
/// `ESC [ 2 J` (clear the screen), `ESC ] 52 ;` (write the clipboard) or a right-to-left override that makes
/// `exe.txt` read as `txt.exe`. ``escaped(_:)`` keeps printable text, `\n` and `\t`, and shows every other control
/// character visibly instead of sending it:
///
/// - C0 controls and DEL in caret notation: ESC is `^[`, BEL `^G`, a lone CR `^M` (`\r\n` becomes `\n`);
/// - C1 controls (U+0080–U+009F, for example the one-byte CSI U+009B) as `<U+009B>`;
/// - bidirectional overrides, embeddings and isolates (U+202A–U+202E, U+2066–U+2069) as `<U+202E>`.
///
/// The mapping works character by character, so a stream can be escaped chunk by chunk: an escape sequence split
/// across chunks is harmless, because its ESC never reaches the terminal.
///
/// ```swift
/// FileHandle.standardOutput.write(Data(TerminalText.escaped(chunk).utf8))
/// ```
public enum TerminalText {
    /// `text` with every control character other than `\n` and `\t` made visible (see ``TerminalText``).
    public static func escaped(_ text: String) -> String {
        // Fast path: most text has nothing to escape.
        if !text.unicodeScalars.contains(where: needsEscape) { return text }
        var out = String.UnicodeScalarView()
        var scalars = text.unicodeScalars.makeIterator()
        var pending = scalars.next()
        while let scalar = pending {
            pending = scalars.next()
            if scalar == "\r", pending == "\n" { continue }  // CR LF: the LF alone ends the line
            guard needsEscape(scalar) else {
                out.append(scalar)
                continue
            }
            out.append(contentsOf: visible(scalar).unicodeScalars)
        }
        return String(out)
    }

    /// `text` on one line: also `\n` and `\t` made visible, for titles, names and reasons printed inside a line.
    public static func escapedLine(_ text: String) -> String {
        escaped(text).replacingOccurrences(of: "\n", with: "^J").replacingOccurrences(of: "\t", with: " ")
    }

    /// A line of JSON (as `connect --json` prints it) with every character ``needsEscape(_:)`` flags written as
    /// `\uXXXX`: the same JSON value, and nothing a terminal acts on. (A JSON writer already escapes C0; DEL, C1 and
    /// bidi controls are valid raw in JSON strings, and appear only inside strings, where `\uXXXX` means the same.)
    public static func jsonSafe(_ json: String) -> String {
        if !json.unicodeScalars.contains(where: needsEscape) { return json }
        var out = String.UnicodeScalarView()
        for scalar in json.unicodeScalars {
            if needsEscape(scalar) && scalar != "\n" && scalar != "\t" {
                let hex = String(scalar.value, radix: 16)
                out.append(contentsOf: ("\\u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex).unicodeScalars)
            } else {
                out.append(scalar)
            }
        }
        return String(out)
    }

    /// Whether `scalar` must not reach a terminal as is.
    public static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x0A, 0x09: return false
        case 0x00...0x1F, 0x7F: return true  // C0 and DEL
        case 0x80...0x9F: return true  // C1
        case 0x202A...0x202E, 0x2066...0x2069: return true  // bidi embeddings, overrides, isolates
        default: return false
        }
    }

    /// How a control character is shown.
    static func visible(_ scalar: Unicode.Scalar) -> String {
        switch scalar.value {
        case 0x00...0x1F: return "^" + String(Character(Unicode.Scalar(UInt8(scalar.value + 0x40))))
        case 0x7F: return "^?"
        default:
            let hex = String(scalar.value, radix: 16, uppercase: true)
            return "<U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex + ">"
        }
    }
}
