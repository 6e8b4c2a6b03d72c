import CDNSSD
import Foundation
import Logging

/// Lists service types with `DNSServiceBrowse` of `_services._dns-sd._udp` (RFC 6763 §9): each answer's
/// name is the type's first label and its "type" the protocol and domain (`_openagents` / `_tcp.local.`).
///
/// All state lives on the run loop's thread.
final class DNSSDTypeBrowser: @unchecked Sendable {
    private let loop: DNSSDRunLoop
    private let domain: String
    private let interface: UInt32
    private let continuation: AsyncStream<ServiceTypeEvent>.Continuation
    private var box: DNSSDCallbackBox?
    private var counts: [ServiceTypeSighting: Int] = [:]
    private var allForNowSent = false

    init(domain: String?, interface: UInt32, loop: DNSSDRunLoop, continuation: AsyncStream<ServiceTypeEvent>.Continuation) {
        self.domain = domain.map { $0.hasSuffix(".") ? $0 : $0 + "." } ?? "local."
        self.interface = interface
        self.loop = loop
        self.continuation = continuation
    }

    func start() {
        loop.perform { self.startBrowse() }
    }

    /// Deallocates the ref, ends the stream and the loop.
    func cancel() {
        loop.perform { self.continuation.finish() }
        loop.stop()
    }

    private func startBrowse() {
        let box = DNSSDCallbackBox()
        box.browse = { flags, interface, error, name, type, _ in
            self.reply(flags: flags, interface: interface, error: error, name: name, type: type)
        }
        box.failed = { error in
            self.continuation.yield(.daemonUnavailable(reason: DNSSDErrorCode.daemonReason(error)))
        }
        let domain = self.domain
        let interface = self.interface
        let error = loop.open(box) { context, ref in
            DNSServiceBrowse(ref, 0, interface, "_services._dns-sd._udp", domain, DNSSDCallbacks.browse, context)
        }
        guard error == DNSSDErrorCode.noError else {
            if DNSSDErrorCode.meansDaemonUnavailable(error) {
                continuation.yield(.daemonUnavailable(reason: DNSSDErrorCode.daemonReason(error)))
            } else {
                continuation.yield(.failure(.backendFailure(operation: "browsing service types", message: DNSSDErrorCode.describe(error))))
            }
            return
        }
        self.box = box
        // dns_sd has no "all for now" on Avahi's layer: say it once the first answers have had a second.
        loop.schedule(after: .seconds(1)) { self.sendAllForNow() }
    }

    private func sendAllForNow() {
        guard !allForNowSent else { return }
        allForNowSent = true
        continuation.yield(.allForNow)
    }

    private func reply(flags: DNSServiceFlags, interface: UInt32, error: DNSServiceErrorType, name: String, type: String) {
        guard error == DNSSDErrorCode.noError else {
            continuation.yield(.failure(.backendFailure(operation: "browsing service types", message: DNSSDErrorCode.describe(error))))
            return
        }
        guard let sighting = ServiceTypeSighting.fromMetaQueryReply(
            name: name, type: type, interface: DNSSDValues.interfaceName(interface))
        else { return }
        if flags & DNSSDConstants.flagsAdd != 0 {
            counts[sighting, default: 0] += 1
            if counts[sighting] == 1 { continuation.yield(.added(sighting)) }
        } else if let count = counts[sighting] {
            if count <= 1 {
                counts.removeValue(forKey: sighting)
                continuation.yield(.removed(sighting))
            } else {
                counts[sighting] = count - 1
            }
        }
        if flags & DNSSDConstants.flagsMoreComing == 0, !allForNowSent, !counts.isEmpty {
            loop.schedule(after: .milliseconds(300)) { self.sendAllForNow() }
        }
    }
}

/// Resolves a host name with `DNSServiceQueryRecord` for A and AAAA (Avahi's compatibility layer has no
/// `DNSServiceGetAddrInfo`), reporting each address found.
final class DNSSDHostResolver: @unchecked Sendable {
    private let loop: DNSSDRunLoop
    private let hostName: String
    private let interface: UInt32
    private let continuation: AsyncStream<HostLookupEvent>.Continuation

    init(hostName: String, interface: UInt32, loop: DNSSDRunLoop, continuation: AsyncStream<HostLookupEvent>.Continuation) {
        self.hostName = hostName.hasSuffix(".") ? hostName : hostName + "."
        self.interface = interface
        self.loop = loop
        self.continuation = continuation
    }

    func start() {
        loop.perform { self.query() }
    }

    /// Deallocates the refs, ends the stream and the loop.
    func cancel() {
        loop.perform { self.continuation.finish() }
        loop.stop()
    }

    private func query() {
        for rrtype in [DNSSDConstants.typeA, DNSSDConstants.typeAAAA] {
            let box = DNSSDCallbackBox()
            box.query = { flags, interface, error, rrtype, rdata in
                guard error == DNSSDErrorCode.noError else {
                    self.continuation.yield(.familyDone)
                    return
                }
                if flags & DNSSDConstants.flagsAdd != 0, let address = DNSSDValues.address(rrtype: rrtype, rdata: rdata, interface: interface) {
                    self.continuation.yield(.address(address))
                }
            }
            box.failed = { error in
                self.continuation.yield(.daemonUnavailable(DNSSDErrorCode.daemonReason(error)))
            }
            let name = hostName
            let interface = self.interface
            let error = loop.open(box) { context, ref in
                DNSServiceQueryRecord(ref, 0, interface, name, rrtype, DNSSDConstants.classIN, DNSSDCallbacks.query, context)
            }
            if error != DNSSDErrorCode.noError {
                if DNSSDErrorCode.meansDaemonUnavailable(error) {
                    continuation.yield(.daemonUnavailable(DNSSDErrorCode.daemonReason(error)))
                } else {
                    continuation.yield(.familyDone)
                }
            }
        }
    }
}
