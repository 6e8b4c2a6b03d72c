public import BridgePairingWire

extension PairingPayload {
    /// The QR code of ``qrText`` (the short link when the payload has one, else the long web app URL), as compact as
    /// it goes (``QRCode/init(compact:)``): a phone's camera opens it in the browser, and native apps read it.
    public func qrCode() throws(QRCodeError) -> QRCode {
        try QRCode(compact: qrText)
    }
}
