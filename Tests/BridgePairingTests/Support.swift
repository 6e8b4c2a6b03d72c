import BridgePairing
import Foundation
import Testing

/// A fresh, empty directory under the system temporary directory; removed by `cleanUp()`.
struct TemporaryDirectory {
    let url: URL

    init() {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("oa-bridge-pairing-tests-\(UUID().uuidString)", isDirectory: true)
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// The state directory the store should create inside this temporary directory.
    var stateDirectory: URL { url.appendingPathComponent("state/oa-bridge", isDirectory: true) }

    func cleanUp() {
        try? FileManager.default.removeItem(at: url)
    }
}

/// Runs `body` and returns the `PairingError` it threw, or `nil` if it did not throw (any other error is a failure).
func pairingError<T>(_ body: () async throws -> T) async -> PairingError? {
    do {
        _ = try await body()
        return nil
    } catch let error as PairingError {
        return error
    } catch {
        Issue.record("expected a PairingError, got \(error)")
        return nil
    }
}

/// The contents of `url` as bytes, or empty when unreadable.
func fileBytes(_ url: URL) -> [UInt8] {
    (try? Data(contentsOf: url)).map { Array($0) } ?? []
}

/// Whether `needle` occurs in `haystack`.
func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
    guard !needle.isEmpty, haystack.count >= needle.count else { return false }
    let first = needle[0]
    var index = 0
    while index <= haystack.count - needle.count {
        if haystack[index] == first && Array(haystack[index..<(index + needle.count)]) == needle { return true }
        index += 1
    }
    return false
}

extension Date {
    /// Where the tests' hand-moved clocks (BridgeTestKit's `ManualBridgeClock`) start: a whole second in 2026, as the
    /// token store keeps times to the second.
    static let pairingTestStart = Date(timeIntervalSince1970: 1_780_000_000)
}
