import NIOCore

/// Checks UTF-8 (RFC 3629) a piece at a time, so that a WebSocket text message split into fragments is refused at the
/// first fragment holding an invalid sequence (RFC 6455 §8.1: fail the connection with 1007), not when it is whole.
///
/// A sequence cut by a fragment boundary is fine: the next piece continues it; ``isComplete`` says whether the text
/// ends between characters (true at the end of a valid message). Runs of ASCII are checked eight bytes at a time.
struct UTF8StreamValidator {
    /// What the next byte must be.
    private enum State: UInt8 {
        /// Between characters.
        case ready
        /// One, two or three continuation bytes (80–BF) to go.
        case one, two, three
        /// After E0: A0–BF (no overlong 3-byte forms), then one more.
        case afterE0
        /// After ED: 80–9F (no surrogates), then one more.
        case afterED
        /// After F0: 90–BF (no overlong 4-byte forms), then two more.
        case afterF0
        /// After F4: 80–8F (nothing past U+10FFFF), then two more.
        case afterF4
        /// An invalid byte was seen.
        case invalid
    }

    private var state = State.ready

    /// Whether everything seen so far is valid UTF-8 or the start of it.
    var isValid: Bool { state != .invalid }

    /// Whether the bytes seen so far are valid and end between characters.
    var isComplete: Bool { state == .ready }

    /// Checks the readable bytes of `buffer` as the continuation of what came before; false once anything was invalid.
    mutating func validate(_ buffer: ByteBuffer) -> Bool {
        guard state != .invalid else { return false }
        let start = state
        state = buffer.withUnsafeReadableBytes { bytes in Self.run(bytes, from: start) }
        return state != .invalid
    }

    private static func run(_ bytes: UnsafeRawBufferPointer, from start: State) -> State {
        var state = start
        var index = 0
        let count = bytes.count
        while index < count {
            if state == .ready {
                // ASCII eight bytes at a time.
                while index + 8 <= count,
                      bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self) & 0x8080_8080_8080_8080 == 0 {
                    index += 8
                }
                guard index < count else { break }
            }
            state = next(state, bytes[index])
            if state == .invalid { return .invalid }
            index += 1
        }
        return state
    }

    private static func next(_ state: State, _ byte: UInt8) -> State {
        let continuation = byte & 0xC0 == 0x80
        switch state {
        case .ready:
            switch byte {
            case 0x00...0x7F: return .ready
            case 0xC2...0xDF: return .one
            case 0xE0: return .afterE0
            case 0xED: return .afterED
            case 0xE1...0xEF: return .two
            case 0xF0: return .afterF0
            case 0xF1...0xF3: return .three
            case 0xF4: return .afterF4
            default: return .invalid
            }
        case .one: return continuation ? .ready : .invalid
        case .two: return continuation ? .one : .invalid
        case .three: return continuation ? .two : .invalid
        case .afterE0: return (0xA0...0xBF).contains(byte) ? .one : .invalid
        case .afterED: return (0x80...0x9F).contains(byte) ? .one : .invalid
        case .afterF0: return (0x90...0xBF).contains(byte) ? .two : .invalid
        case .afterF4: return (0x80...0x8F).contains(byte) ? .two : .invalid
        case .invalid: return .invalid
        }
    }
}
