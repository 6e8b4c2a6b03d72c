// The store speaks the wire types (its API takes ExchangeRequest and answers TokenResponse and PairingPayload), so
// a module that imports BridgePairing sees them too. The client side imports BridgePairingWire alone.
@_exported import BridgePairingWire
