import Synchronization

/// A JSON-RPC 2.0 notification: a call without an id, which never gets a response.
///
/// Equality and hashing look at the method and the params only, not at ``rawParams`` or ``scannedUpdate``.
public struct JSONRPCNotification: Sendable, Hashable {
    /// The method name.
    public var method: String
    /// The parameters: an object or an array, or absent.
    ///
    /// Changing them forgets ``rawParams`` and ``scannedUpdate``. For a notification made by
    /// ``init(scanning:method:)`` they are parsed from its bytes when first read.
    public var params: JSONValue? {
        get { deferred?.value ?? storedParams }
        set {
            storedParams = newValue
            deferred = nil
            rawParams = nil
            scannedUpdate = nil
        }
    }
    private var storedParams: JSONValue?
    /// Params not parsed yet (``init(scanning:method:)``).
    private var deferred: DeferredParams?
    /// The bytes `params` was read from, when the notification was parsed from bytes (a line of an agent) and its
    /// params is an object; `nil` otherwise, and once ``params`` is changed.
    public private(set) var rawParams: JSONRawParams?
    /// `params.sessionId` and `params.update.sessionUpdate` when ``init(scanning:method:)`` made it: a relay can route
    /// it by these and forward ``rawParams`` without reading ``params``.
    public private(set) var scannedUpdate: ScannedUpdate?

    /// Creates a notification.
    public init(method: String, params: JSONValue? = nil) {
        self.method = method
        self.storedParams = params
    }

    /// A parsed notification with the bytes of its params.
    init(method: String, params: JSONValue?, rawParams: JSONRawParams?) {
        self.method = method
        self.storedParams = params
        self.rawParams = rawParams
    }

    /// A session notification of `method` read by a validating scan of `line` (one JSON-RPC message), without
    /// making its params: it has ``scannedUpdate`` and ``rawParams`` (with no repeated key), and its ``params`` are
    /// parsed when first read.
    ///
    /// `nil` when the line is not such a notification without `params._meta` (or the scan is not sure it is): parse
    /// it with ``JSONRPCFrame/init(parsingUTF8:)``, which reads it as it always did.
    public init?(scanning line: [UInt8], method: String) {
        var name = method
        let scanned = name.withUTF8 { name in
            line.withUnsafeBufferPointer { NotificationScanner.scan($0, method: name) }
        }
        guard let scanned else { return nil }
        let raw = JSONRawParams(message: line, span: scanned.params, repeatedKey: false)
        self.method = method
        self.storedParams = nil
        self.deferred = DeferredParams(raw)
        self.rawParams = raw
        self.scannedUpdate = scanned.update
    }

    /// Equal when method and params are: what the bridge noted while scanning the frame is not compared.
    public static func == (lhs: JSONRPCNotification, rhs: JSONRPCNotification) -> Bool {
        lhs.method == rhs.method && lhs.params == rhs.params
    }

    /// Hashes what `==` compares: the method and the params.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(method)
        hasher.combine(params)
    }
}

/// Params kept as bytes the scan validated, parsed once when first read.
private final class DeferredParams: Sendable {
    private let raw: JSONRawParams
    private let parsed = Mutex<JSONValue?>(nil)

    init(_ raw: JSONRawParams) {
        self.raw = raw
    }

    var value: JSONValue {
        parsed.withLock { parsed in
            if let parsed { return parsed }
            var parser = raw.withUnsafeBytes { JSONParser(bytes: Array($0)) }
            // The scan accepted these bytes as an object, which the parser reads the same way.
            let value = (try? parser.parseDocument()) ?? .object([:])
            parsed = value
            return value
        }
    }
}
