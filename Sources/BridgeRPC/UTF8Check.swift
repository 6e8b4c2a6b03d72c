/// UTF-8 validation of raw bytes (RFC 3629: no overlong forms, no surrogates, nothing past U+10FFFF), with a fast path
/// for ASCII, which is most of what agents write.
enum UTF8Check {
    /// Whether `bytes` are well-formed UTF-8.
    static func isValid(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        let count = bytes.count
        var index = 0
        while index < count {
            // Eight ASCII bytes at a time.
            if index + 8 <= count {
                let word = UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self)
                if word & 0x8080_8080_8080_8080 == 0 {
                    index += 8
                    continue
                }
            }
            let lead = base[index]
            if lead < 0x80 {
                index += 1
                continue
            }
            let length: Int
            var low: UInt8 = 0x80
            var high: UInt8 = 0xBF
            switch lead {
            case 0xC2...0xDF: length = 2
            case 0xE0:
                length = 3
                low = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF: length = 3
            case 0xED:
                length = 3
                high = 0x9F  // no UTF-16 surrogates
            case 0xF0:
                length = 4
                low = 0x90
            case 0xF1...0xF3: length = 4
            case 0xF4:
                length = 4
                high = 0x8F  // nothing past U+10FFFF
            default: return false
            }
            guard index + length <= count else { return false }
            let second = base[index + 1]
            guard second >= low, second <= high else { return false }
            var position = index + 2
            while position < index + length {
                guard base[position] & 0xC0 == 0x80 else { return false }
                position += 1
            }
            index += length
        }
        return true
    }
}
