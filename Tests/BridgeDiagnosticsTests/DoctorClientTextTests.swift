import BridgeClient
import BridgeDiscovery
import Foundation
import Logging
import Testing

@testable import BridgeDiagnostics

/// Doctor's client checks say what to do in words and name the step (issue 31 item 5): the command line adds the
/// flag (`oa-bridge connect --pair`), so no flag is spelled here.
@Suite("Doctor's client texts name no flag", .tags(.unit))
struct DoctorClientTextTests {
    @Test("no saved bridge: ok, with the pairing step as the fix and no flag in the words")
    func noSavedBridge() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("doctor-client-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let options = Doctor.Options(backend: AvahiBackend(), stateDirectory: directory)
        let doctor = Doctor(options: options, logger: Logger(label: "test.doctor-client"))
        let checks = await doctor.savedBridgeChecks(SavedBridges(directory: directory), bridges: [], discovered: [])
        let check = try #require(checks.first)
        #expect(checks.count == 1 && check.status == .ok && check.setting == .pairing)
        #expect(check.fix?.contains("scan the QR code") == true)
        #expect(!check.detail.contains("--") && check.fix?.contains("--") == false, "the command line names the flag: \(check)")
    }

    @Test("an unexpected error in a check's detail says what shows more in words, without a flag")
    func unexpectedError() {
        let words = Doctor.words(for: CocoaError(.fileReadUnknown))
        #expect(words == "failed unexpectedly (a connect at log level debug shows the details)" && !words.contains("--"), "\(words)")
    }

    @Test("the role row names doctor's desk role in words and as DoctorSetting.role, asked or decided, without --role")
    func role() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("doctor-role-\(UUID().uuidString)")
        var options = Doctor.Options(backend: AvahiBackend(), stateDirectory: directory)
        options.port = 1  // nothing listens there: the role is decided from files, and there are none
        options.configFile = directory.appendingPathComponent("config.yaml").path
        let (role, check) = Doctor(options: options, logger: Logger(label: "test.doctor-role")).decideRole(bridgeAnswers: false)
        #expect(role == .client && check.setting == .role && check.fix == nil)
        #expect(check.detail.contains("(doctor's desk role checks this machine as a desk)") && !check.detail.contains("--"), "\(check.detail)")
        options.role = .desk
        let (asked, row) = Doctor(options: options, logger: Logger(label: "test.doctor-role")).decideRole(bridgeAnswers: false)
        #expect(asked == .desk && row.detail == "desk (as asked)" && row.setting == nil)
    }
}
