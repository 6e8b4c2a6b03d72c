import BridgeDPoP
import Foundation
import Testing

/// DPoP between this package and an implementation no one here wrote: pyca/cryptography (in the test venv) makes a
/// proof with a key of its own that the bridge's verifier takes, and checks the signature of a proof the Swift
/// signer made; both sides compute the same RFC 7638 thumbprint.
@Suite("DPoP with pyca/cryptography as the other side", .tags(.externalTool),
       .enabled(if: PyCryptography.python != nil, "needs .venv with cryptography (pip install -r Tests/requirements.txt)"))
struct DPoPInteropTests {
    @Test("a proof pyca/cryptography signed verifies here, with the thumbprint it computed")
    func pythonMadeProof() async throws {
        let python = try #require(PyCryptography.python)
        let issued = Int(Date().timeIntervalSince1970)
        let output = try PyCryptography.run(python, ["make", "GET", "https://desk.local:9099/acp", String(issued), "tok"])
        let lines = output.split(separator: "\n").map(String.init)
        try #require(lines.count == 2)
        let verifier = DPoPVerifier(nonces: nil)
        let request = DPoPRequest(method: "GET", uri: "wss://desk.local:9099/acp", accessToken: "tok")
        let checked = try await verifier.check(lines[0], for: request, now: Date(timeIntervalSince1970: Double(issued)))
        #expect(checked.thumbprint == lines[1])
        try verifier.accept(checked, boundTo: lines[1], now: Date(timeIntervalSince1970: Double(issued)))
    }

    @Test("pyca/cryptography verifies a proof the Swift signer made and computes the same thumbprint")
    func swiftMadeProof() async throws {
        let python = try #require(PyCryptography.python)
        let device = DPoPSigner()
        let proof = try await device.proof(method: "POST", uri: "https://desk.local:9099/api/auth/refresh")
        let thumbprint = try PyCryptography.run(python, ["verify", proof]).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(thumbprint == device.publicKey.thumbprint)
        // and a proof with a flipped signature byte is refused by it: the check above can fail
        var bytes = Array(proof.utf8)
        let last = bytes.count - 5
        bytes[last] = bytes[last] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        #expect(throws: PyCryptography.Failure.self) {
            try PyCryptography.run(python, ["verify", String(decoding: bytes, as: UTF8.self)])
        }
    }
}

/// Runs the pyca/cryptography side of the interop test.
enum PyCryptography {
    static let script = """
        import base64, hashlib, json, sys, uuid
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature

        def b64(data): return base64.urlsafe_b64encode(data).rstrip(b"=").decode()
        def unb64(text): return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        def thumbprint(jwk):
            canonical = json.dumps({k: jwk[k] for k in ("crv", "kty", "x", "y")}, separators=(",", ":"), sort_keys=True)
            return b64(hashlib.sha256(canonical.encode()).digest())

        if sys.argv[1] == "make":
            method, uri, iat, token = sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
            key = ec.generate_private_key(ec.SECP256R1())
            numbers = key.public_key().public_numbers()
            jwk = {"kty": "EC", "crv": "P-256", "x": b64(numbers.x.to_bytes(32, "big")), "y": b64(numbers.y.to_bytes(32, "big"))}
            header = {"typ": "dpop+jwt", "alg": "ES256", "jwk": jwk}
            claims = {"jti": str(uuid.uuid4()), "htm": method, "htu": uri, "iat": iat,
                      "ath": b64(hashlib.sha256(token.encode()).digest())}
            signing_input = b64(json.dumps(header).encode()) + "." + b64(json.dumps(claims).encode())
            r, s = decode_dss_signature(key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256())))
            print(signing_input + "." + b64(r.to_bytes(32, "big") + s.to_bytes(32, "big")))
            print(thumbprint(jwk))
        else:
            header_b64, claims_b64, signature_b64 = sys.argv[2].split(".")
            header = json.loads(unb64(header_b64))
            assert header["typ"] == "dpop+jwt" and header["alg"] == "ES256", header
            jwk = header["jwk"]
            public = ec.EllipticCurvePublicNumbers(int.from_bytes(unb64(jwk["x"]), "big"),
                                                   int.from_bytes(unb64(jwk["y"]), "big"), ec.SECP256R1()).public_key()
            raw = unb64(signature_b64)
            signature = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
            public.verify(signature, (header_b64 + "." + claims_b64).encode(), ec.ECDSA(hashes.SHA256()))
            claims = json.loads(unb64(claims_b64))
            assert claims["htm"] == "POST" and claims["jti"] and isinstance(claims["iat"], int), claims
            print(thumbprint(jwk))
        """

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// The first of `$OA_BRIDGE_PYTHON`, `<package>/.venv/bin/python` that imports cryptography.
    static let python: String? = {
        let packageRoot = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        var candidates: [String] = []
        if let configured = ProcessInfo.processInfo.environment["OA_BRIDGE_PYTHON"] { candidates.append(configured) }
        candidates.append(packageRoot.appendingPathComponent(".venv/bin/python").path)
        for python in candidates where FileManager.default.isExecutableFile(atPath: python) {
            if (try? run(python, ["-c", "import cryptography"], script: false)) != nil { return python }
        }
        return nil
    }()

    @discardableResult
    static func run(_ python: String, _ arguments: [String], script: Bool = true) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = script ? ["-c", Self.script] + arguments : arguments
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        let errorData = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure(description: "python failed: \(String(decoding: errorData, as: UTF8.self))")
        }
        return String(decoding: data, as: UTF8.self)
    }
}
