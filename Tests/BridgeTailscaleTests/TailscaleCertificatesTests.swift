import BridgeTestKit
import Crypto
import Foundation
import Logging
import NIOSSL
import SwiftASN1
import Synchronization
import Testing
import X509
@testable import BridgeTailscale

/// The tailnet's HTTPS certificate (issue 11 item 6), against a stand-in for tailscaled's `?type=pair` answer made
/// from a test CA: parsing, the choice by SNI, and renewal before expiry on a clock moved by hand.
@Suite(.tags(.unit))
struct TailscaleCertificatesTests {
    static let name = "desk.tail-test.ts.net"

    @Test func aPairParsesIntoTheChainAndItsValidity() throws {
        let ca = TestCA()
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let pair = try ca.pair(for: Self.name, notBefore: start, days: 90)
        let certificate = try TailscaleCertificate(pairPEM: pair.pem)
        #expect(certificate.notValidBefore == start)
        #expect(certificate.notValidAfter == start.addingTimeInterval(90 * 86400))
        #expect(certificate.serial == pair.serial)
        #expect(certificate.override.certificateChain?.count == 2)
        // tailscaled writes the key first; the order does not matter.
        let certificateFirst = pair.certificatePEM + pair.keyPEM
        #expect(try TailscaleCertificate(pairPEM: Data(certificateFirst.utf8)).serial == pair.serial)
    }

    @Test func aPairWithoutAKeyOrWithAnotherKeyIsRefusedByType() throws {
        let ca = TestCA()
        let pair = try ca.pair(for: Self.name, notBefore: Date(), days: 90)
        #expect(throws: TailscaleCertificateError.notAPair("expected one private key, found 0")) {
            try TailscaleCertificate(pairPEM: Data(pair.certificatePEM.utf8))
        }
        let other = P256.Signing.PrivateKey().pemRepresentation + "\n"
        #expect(throws: TailscaleCertificateError.keyDoesNotMatch) {
            try TailscaleCertificate(pairPEM: Data((other + pair.certificatePEM).utf8))
        }
        #expect(throws: TailscaleCertificateError.notAPair("no certificate")) {
            try TailscaleCertificate(pairPEM: Data(pair.keyPEM.utf8))
        }
    }

    @Test func theTailnetCertificateGoesOnlyToClientsAskingForTheName() async throws {
        let ca = TestCA()
        let now = Date()
        let pair = try ca.pair(for: Self.name, notBefore: now.addingTimeInterval(-3600), days: 90)
        let clock = TestClock(wallStart: now)
        let certificates = TailscaleCertificates(name: Self.name + ".", clock: clock) { _ throws(TailscaleError) in pair.pem }
        // Nothing fetched yet: everyone gets the bridge's identity.
        #expect(certificates.override(forServerName: Self.name).certificateChain == nil)
        try await certificates.refresh()
        #expect(certificates.override(forServerName: Self.name).certificateChain?.count == 2)
        #expect(certificates.override(forServerName: "DESK.Tail-Test.ts.net.").certificateChain?.count == 2)
        #expect(certificates.override(forServerName: nil).certificateChain == nil)
        #expect(certificates.override(forServerName: "desk.local").certificateChain == nil)
        #expect(certificates.override(forServerName: "other.tail-test.ts.net").certificateChain == nil)
        // Past its expiry it is not served.
        let afterExpiry = TestClock(wallStart: now.addingTimeInterval(91 * 86400))
        let later = TailscaleCertificates(name: Self.name, clock: afterExpiry) { _ throws(TailscaleError) in pair.pem }
        try await later.refresh()
        #expect(later.override(forServerName: Self.name).certificateChain == nil)
    }

    @Test func theCertificateIsRenewedBeforeItExpires() async throws {
        let ca = TestCA()
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let clock = TestClock(wallStart: start)
        let first = try ca.pair(for: Self.name, notBefore: start.addingTimeInterval(-60), days: 90)
        let renewed = try ca.pair(for: Self.name, notBefore: start.addingTimeInterval(59 * 86400), days: 90)
        // tailscaled's stand-in: hands out the first certificate until it renews, a third of its lifetime before the end.
        let tailscaled = FakeTailscaled(answer: .success(first.pem))
        let certificates = TailscaleCertificates(name: Self.name, clock: clock) { name throws(TailscaleError) in
            try tailscaled.fetch(name)
        }
        let renewal = Task { await certificates.run(logger: Logger(label: "test")) }
        defer { renewal.cancel() }

        #expect(await clock.waitForSleepers(1))
        #expect(tailscaled.requests == [Self.name])
        #expect(certificates.certificate?.serial == first.serial)

        // A day at a time for 59 days: asked once a day, the same certificate.
        for _ in 0..<59 {
            clock.advance(by: .seconds(86400))
            #expect(await clock.waitForSleepers(1))
        }
        #expect(tailscaled.requests.count == 60)
        #expect(certificates.certificate?.serial == first.serial)

        // Renewal due (day 60): tailscaled still gives the old one, an hour later the new one, long before day 90.
        clock.advance(by: .seconds(86400))
        #expect(await clock.waitForSleepers(1))
        #expect(certificates.certificate?.serial == first.serial)
        tailscaled.set(.success(renewed.pem))
        clock.advance(by: .seconds(3600))
        #expect(await clock.waitForSleepers(1))
        #expect(certificates.certificate?.serial == renewed.serial)
        #expect(clock.wallTime < start.addingTimeInterval(90 * 86400 - 60))  // the first one had not expired yet
        #expect(certificates.override(forServerName: Self.name).certificateChain != nil)

        // tailscaled goes away: the held certificate stays while valid, retried after 1, 2, 4 … minutes.
        tailscaled.set(.failure(.unreachable("stand-in stopped")))
        let before = tailscaled.requests.count
        clock.advance(by: .seconds(86400))
        #expect(await clock.waitForSleepers(1))
        #expect(tailscaled.requests.count == before + 1)
        #expect(certificates.certificate?.serial == renewed.serial)
        clock.advance(by: .seconds(60))
        #expect(await clock.waitForSleepers(1))
        #expect(tailscaled.requests.count == before + 2)
        clock.advance(by: .seconds(119))
        #expect(clock.sleeperCount == 1)  // not due yet: still asleep, nothing asked
        #expect(tailscaled.requests.count == before + 2)
        clock.advance(by: .seconds(1))
        #expect(await clock.waitForSleepers(1))
        #expect(tailscaled.requests.count == before + 3)

        // Past the renewed certificate's expiry with tailscaled still gone: dropped, everyone gets the identity.
        clock.advance(by: .seconds(200 * 86400))
        #expect(await clock.waitForSleepers(1))
        #expect(certificates.certificate == nil)
        #expect(certificates.override(forServerName: Self.name).certificateChain == nil)
    }

    @Test func theScheduleRenewsAtAThirdOfTheLifetimeAndBacksOff() throws {
        let ca = TestCA()
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let certificate = try TailscaleCertificate(pairPEM: ca.pair(for: Self.name, notBefore: start, days: 90).pem)
        #expect(TailscaleCertificateSchedule.renewalDate(of: certificate) == start.addingTimeInterval(60 * 86400))
        #expect(TailscaleCertificateSchedule.delay(after: certificate, now: start) == .seconds(86400))
        #expect(TailscaleCertificateSchedule.delay(after: certificate, now: start.addingTimeInterval(59.5 * 86400)) == .seconds(43200))
        #expect(TailscaleCertificateSchedule.delay(after: certificate, now: start.addingTimeInterval(70 * 86400)) == .seconds(3600))
        #expect((1...8).map(TailscaleCertificateSchedule.retryDelay) == [60, 120, 240, 480, 960, 1920, 3600, 3600].map { .seconds($0) })
    }
}

/// A stand-in for tailscaled's certificate answer, counting the questions.
final class FakeTailscaled: Sendable {
    private let state: Mutex<(answer: Result<Data, TailscaleError>, requests: [String])>

    init(answer: Result<Data, TailscaleError>) { state = Mutex((answer, [])) }

    var requests: [String] { state.withLock { $0.requests } }

    func set(_ answer: Result<Data, TailscaleError>) { state.withLock { $0.answer = answer } }

    func fetch(_ name: String) throws(TailscaleError) -> Data {
        let answer = state.withLock { state in
            state.requests.append(name)
            return state.answer
        }
        return try answer.get()
    }
}

/// A test certificate authority issuing leaf certificates as Let's Encrypt would for a MagicDNS name.
struct TestCA {
    let key = P256.Signing.PrivateKey()
    let name: DistinguishedName

    init() {
        name = (try? DistinguishedName { CommonName("oa-bridge test CA") }) ?? DistinguishedName()
    }

    struct Pair {
        let keyPEM: String
        let certificatePEM: String
        let serial: String
        /// As tailscaled sends it: the key, then the leaf and the CA.
        var pem: Data { Data((keyPEM + certificatePEM).utf8) }
    }

    func pair(for dnsName: String, notBefore: Date, days: Double) throws -> Pair {
        let leafKey = P256.Signing.PrivateKey()
        let serial = Certificate.SerialNumber()
        let leaf = try Certificate(
            version: .v3, serialNumber: serial, publicKey: .init(leafKey.publicKey),
            notValidBefore: notBefore, notValidAfter: notBefore.addingTimeInterval(days * 86400),
            issuer: name, subject: try DistinguishedName { CommonName(dnsName) },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames([.dnsName(dnsName)])
            },
            issuerPrivateKey: .init(key))
        let root = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(key.publicKey),
            notValidBefore: notBefore.addingTimeInterval(-86400), notValidAfter: notBefore.addingTimeInterval(3650 * 86400),
            issuer: name, subject: name, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions { Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil)) },
            issuerPrivateKey: .init(key))
        return Pair(
            keyPEM: leafKey.pemRepresentation + "\n",
            certificatePEM: try leaf.serializeAsPEM().pemString + "\n" + root.serializeAsPEM().pemString + "\n",
            serial: serial.bytes.map { String(format: "%02x", $0) }.joined())
    }
}

/// The shared hand-moved clock.
typealias TestClock = ManualBridgeClock
