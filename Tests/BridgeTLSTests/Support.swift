import Foundation

/// A fresh directory under the system's temporary directory, removed when the value goes.
final class TemporaryDirectory {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("bridge-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(at: url)
    }
}

/// The openssl command line, the independent check of what the module computes.
enum OpenSSL {
    struct Failed: Error { let status: Int32 }

    /// Runs `openssl` with `arguments` (and `input` on stdin), returning stdout.
    static func run(_ arguments: [String], input: Data? = nil) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl"] + arguments
        let output = Pipe()
        let inputPipe = Pipe()
        process.standardOutput = output
        process.standardInput = inputPipe
        try process.run()
        if let input { inputPipe.fileHandleForWriting.write(input) }
        try inputPipe.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw Failed(status: process.terminationStatus) }
        return String(decoding: data, as: UTF8.self)
    }

    /// `openssl x509 -pubkey | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64`.
    static func pin(ofCertificateAt path: String) throws -> String {
        let publicKey = try run(["x509", "-noout", "-pubkey", "-in", path])
        let der = try runBinary(["pkey", "-pubin", "-outform", "der"], input: Data(publicKey.utf8))
        let digest = try runBinary(["dgst", "-sha256", "-binary"], input: der)
        return digest.base64EncodedString()
    }

    private static func runBinary(_ arguments: [String], input: Data) throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl"] + arguments
        let output = Pipe()
        let inputPipe = Pipe()
        process.standardOutput = output
        process.standardInput = inputPipe
        try process.run()
        inputPipe.fileHandleForWriting.write(input)
        try inputPipe.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw Failed(status: process.terminationStatus) }
        return data
    }
}
