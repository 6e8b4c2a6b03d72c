public import Foundation

/// JSON coders shared by the server and clients for pairing and auth bodies (ISO 8601 dates, unescaped slashes).
public enum PairingJSON {
    /// An encoder with ISO 8601 dates, sorted keys and unescaped slashes.
    public static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    /// A decoder with ISO 8601 dates.
    public static var decoder: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }
}
