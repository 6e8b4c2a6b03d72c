import BridgeDiscovery
import BridgeTestKit
import Foundation
import Logging
import Testing

@testable import BridgeDiagnostics

/// Doctor reads the time from its options' clock (issue 31 item 4), so its clock check is tested on a clock a test sets
/// instead of the machine's.
///
/// Making the backend opens nothing: no check that browses runs here.
@Suite("Doctor's clock check on an injected clock", .tags(.unit))
struct DoctorClockTests {
    static func check(at date: Date) -> DoctorCheck {
        var options = Doctor.Options(backend: AvahiBackend(), stateDirectory: FileManager.default.temporaryDirectory)
        options.clock = ManualBridgeClock(wallStart: date)
        return Doctor(options: options, logger: Logger(label: "test.doctor-clock")).clock()
    }

    @Test("a clock that says 2001 fails the check, naming the time it read; one in 2026 passes")
    func judgesTheInjectedClock() {
        let wrong = Self.check(at: Date(timeIntervalSince1970: 1_000_000_000))
        #expect(wrong.status == .fail)
        #expect(wrong.detail.contains("2001"), "\(wrong.detail)")
        let right = Self.check(at: Date(timeIntervalSince1970: 1_780_000_000))
        #expect(right.status == .ok)
        #expect(right.detail.hasPrefix("2026-"), "\(right.detail)")
    }
}
