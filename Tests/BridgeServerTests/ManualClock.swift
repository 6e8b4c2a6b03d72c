import BridgeTestKit

/// The shared hand-moved clock (``ManualBridgeClock``); this name wins over BridgePairing's `ManualClock` here.
typealias ManualClock = ManualBridgeClock
