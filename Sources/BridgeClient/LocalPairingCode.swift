import BridgeDiscovery
public import BridgePairingWire
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The pairing code of the bridge running on this machine, asked over loopback (the pairing endpoints answer only
/// there): `GET /api/pair/info` for the current payload, `POST /api/pair/refresh` to revoke it and make another.
///
/// What `oa-bridge pair` prints.
public struct LocalPairingCode: Sendable {
    /// The port the bridge listens on.
    public var port: Int
    /// How long the request may take.
    public var timeout: Duration

    /// The bridge on `port` of this machine.
    public init(port: Int = BridgeEndpoint.defaultPort, timeout: Duration = .seconds(5)) {
        self.port = port
        self.timeout = timeout
    }

    /// The current payload, or with `rotate` a new one (the old code stops working).
    /// - Throws: ``LocalPairingCodeError``.
    public func fetch(rotate: Bool = false) async throws(LocalPairingCodeError) -> PairingPayload {
        let url = "http://127.0.0.1:\(port)" + (rotate ? "/api/pair/refresh" : "/api/pair/info")
        guard let target = URL(string: url) else { throw .unreachable(url: url, reason: "not a URL") }
        var request = URLRequest(url: target)
        request.httpMethod = rotate ? "POST" : "GET"
        request.timeoutInterval = timeout.inSeconds
        if rotate {
            request.httpBody = Data("{}".utf8)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let session = URLSession(configuration: .ephemeral)
        defer { session.finishTasksAndInvalidate() }
        let data: Data
        let status: Int
        do {
            let (body, response) = try await session.data(for: request)
            (data, status) = (body, (response as? HTTPURLResponse)?.statusCode ?? 0)
        } catch {
            throw .unreachable(url: url, reason: error.localizedDescription)
        }
        guard status == 200 else { throw .refused(port: port, status: status, body: String(decoding: data, as: UTF8.self)) }
        do {
            return try PairingJSON.decoder.decode(PairingPayload.self, from: data)
        } catch {
            throw .invalid(port: port, reason: "\(error)")
        }
    }
}

/// Why the local bridge's pairing code could not be had, with what to do.
public enum LocalPairingCodeError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Nothing answered at `url`.
    case unreachable(url: String, reason: String)
    /// The bridge answered with another status than 200.
    case refused(port: Int, status: Int, body: String)
    /// The answer was not a pairing payload.
    case invalid(port: Int, reason: String)

    /// The message for the user.
    public var description: String {
        switch self {
        case .unreachable(let url, let reason):
            return "cannot reach the bridge at \(url): \(reason). Is 'oa-bridge serve' running, on that port?"
        case .refused(let port, let status, let body):
            return "the bridge on port \(port) answered HTTP \(status): \(body)"
        case .invalid(let port, let reason):
            return "the bridge on port \(port) did not answer with a pairing payload: \(reason)"
        }
    }
}
