import BridgePairingWire

extension PairingPayload {
    /// The QR code of ``jsonString()`` at error-correction level M.
    public func qrCode() throws(QRCodeError) -> QRCode {
        try QRCode(text: jsonString(), errorCorrection: .medium)
    }
}
