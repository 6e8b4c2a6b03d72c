import Foundation

/// Body of `POST /api/auth/exchange`: `{"pairing_token": "oa_p_…", "device_name": "Pixel 8"}` (name optional);
/// when polling after a 202 in approval mode, add `"device_id"` from the 202 answer.
public struct ExchangeRequest: Sendable, Equatable, Codable {
    /// The pairing token from the QR code.
    public var pairingToken: String
    /// A name for the device shown in `oa-bridge devices list`.
    public var deviceName: String?
    /// The device ID from a 202 pending answer, when polling for approval.
    public var deviceID: String?

    enum CodingKeys: String, CodingKey {
        case pairingToken = "pairing_token"
        case deviceName = "device_name"
        case deviceID = "device_id"
    }

    /// A request for `pairingToken`, optionally naming the device, or continuing as `deviceID` after a 202.
    public init(pairingToken: String, deviceName: String? = nil, deviceID: String? = nil) {
        self.pairingToken = pairingToken
        self.deviceName = deviceName
        self.deviceID = deviceID
    }
}
