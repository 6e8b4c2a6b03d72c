import Foundation

extension Data {
    /// base64url without padding (RFC 4648 §5), as JOSE writes binary values: Foundation's base64 with the two
    /// characters swapped byte by byte (no string search and replace, which costs microseconds per value on Linux).
    package func base64URLEncodedString() -> String {
        var bytes = Array(base64EncodedData())
        while bytes.last == UInt8(ascii: "=") { bytes.removeLast() }
        for index in bytes.indices {
            switch bytes[index] {
            case UInt8(ascii: "+"): bytes[index] = UInt8(ascii: "-")
            case UInt8(ascii: "/"): bytes[index] = UInt8(ascii: "_")
            default: break
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Decodes base64url without padding; nil for any other alphabet or a padded value.
    package init?(base64URLEncoded text: String) {
        self.init(base64URLEncoded: Array(text.utf8)[...])
    }

    /// Decodes base64url without padding from its ASCII bytes; nil for any other alphabet or a padded value.
    package init?(base64URLEncoded text: ArraySlice<UInt8>) {
        if text.count % 4 == 1 { return nil }
        var base64: [UInt8] = []
        base64.reserveCapacity(text.count + 3)
        for byte in text {
            switch byte {
            case UInt8(ascii: "-"): base64.append(UInt8(ascii: "+"))
            case UInt8(ascii: "_"): base64.append(UInt8(ascii: "/"))
            case UInt8(ascii: "+"), UInt8(ascii: "/"), UInt8(ascii: "="): return nil
            default: base64.append(byte)
            }
        }
        while base64.count % 4 != 0 { base64.append(UInt8(ascii: "=")) }
        self.init(base64Encoded: Data(base64))
    }
}
