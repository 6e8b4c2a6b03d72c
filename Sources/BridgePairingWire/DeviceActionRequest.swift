import Foundation

/// Body of `POST /api/pair/approve` and `/api/pair/deny`: `{"device_id": "…"}` (any unique prefix).
public struct DeviceActionRequest: Sendable, Equatable, Codable {
    /// The device ID or a unique prefix of it.
    public var deviceID: String

    enum CodingKeys: String, CodingKey {
        case deviceID = "device_id"
    }

    /// A request about `deviceID`.
    public init(deviceID: String) {
        self.deviceID = deviceID
    }
}
