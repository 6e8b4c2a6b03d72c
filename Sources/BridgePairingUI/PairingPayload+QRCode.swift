import BridgePairingWire

extension PairingPayload {
    /// The QR code of ``appURL`` (the web app URL with the payload in its fragment) at error-correction level M: a
    /// phone's camera opens it in the browser, and native apps read the payload out of it.
    public func qrCode() throws(QRCodeError) -> QRCode {
        try QRCode(text: appURL, errorCorrection: .medium)
    }
}
