import Foundation

/// Fresh directories for the tests, under the system's temporary directory.
enum TestDirectory {
    /// A new empty directory; its path.
    static func make() throws -> String {
        let path = NSTemporaryDirectory() + "oa-bridge-test-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }
}
