public import BridgePairing
public import Foundation

/// The HTML of `GET /pair`: the QR code (the web app URL), the manual details, the devices waiting for approval and
/// the paired devices.
///
/// The page is self-contained (inline SVG, inline CSS and a few lines of script). It keeps itself current: its script
/// polls `GET /api/pair/state` (``sections(payload:expiresAt:pending:devices:)`` as JSON) every 2 s while the page is
/// visible, for at most 30 minutes, and swaps in what changed, so a used code is replaced and a device waiting for
/// approval appears without a reload (issue 29 item 3). Its buttons call `POST /api/pair/refresh`,
/// `POST /api/pair/approve`, `/api/pair/deny` and `/api/pair/revoke` with JSON bodies, then poll at once.
public enum PairingPage {
    /// The parts of the page that change, as HTML (every value escaped), and a version that changes with them.
    public struct Sections: Sendable, Equatable, Codable {
        /// The QR code as inline SVG.
        public var qr: String
        /// The connection details (`<dt>`/`<dd>` pairs).
        public var details: String
        /// The devices waiting for approval.
        public var pending: String
        /// The paired devices.
        public var devices: String
        /// A digest of the other fields: the page swaps them in only when it changes.
        public var version: String
    }

    /// The changing parts of the page for `payload` (its QR code as SVG), the pairing code's expiry, pending devices
    /// and the paired devices (`devices`: every record; pending and revoked ones are left out of that list).
    public static func sections(
        payload: PairingPayload, expiresAt: Date?, pending: [DeviceRecord], devices: [DeviceRecord]
    ) throws(QRCodeError) -> Sections {
        let svg = try payload.qrCode().svgString(quietZone: 4, pixelsPerModule: 6)
        let formatter = ISO8601DateFormatter()
        var details = """
            <dt>Phone web app</dt><dd><code id="app-url">\(escape(payload.qrText))</code></dd>
            <dt>Name</dt><dd>\(escape(payload.name))</dd>
            <dt>HTTP</dt><dd><code>\(escape(payload.http))</code></dd>
            <dt>WebSocket</dt><dd><code>\(escape(payload.ws))</code></dd>
            """
        if let pin = payload.pin {
            details += "\n<dt>Certificate pin</dt><dd><code>\(escape(pin))</code></dd>"
        }
        if let token = payload.token {
            details += "\n<dt>Pairing code</dt><dd><code id=\"token\">\(escape(token))</code></dd>"
            if let expiresAt {
                details += "\n<dt>Expires</dt><dd><time datetime=\"\(formatter.string(from: expiresAt))\">\(formatter.string(from: expiresAt))</time> (single use)</dd>"
            }
        } else {
            details += "\n<dt>Authentication</dt><dd><strong>off</strong> in the bridge's settings (auth: none): only allowed networks may connect</dd>"
        }
        if !payload.fallbacks.isEmpty {
            details += "\n<dt>Also reachable as</dt><dd>\(payload.fallbacks.map { "<code>\(escape($0))</code>" }.joined(separator: ", "))</dd>"
        }
        let pendingHTML: String
        if pending.isEmpty {
            pendingHTML = "<p id=\"no-pending\">No device is waiting for approval.</p>"
        } else {
            pendingHTML = "<ul id=\"pending\">" + pending.map { device in
                let seen = device.lastAddress.map { " from \(escape($0))" } ?? ""
                return "<li><strong>\(escape(device.name))</strong>\(seen) <code>\(escape(String(device.id.prefix(8))))</code> "
                    + "<button data-approve=\"\(escape(device.id))\">Approve</button> "
                    + "<button data-deny=\"\(escape(device.id))\">Deny</button></li>"
            }.joined() + "</ul>"
        }
        let paired = devices.filter { $0.approved && !$0.isRevoked }
        let pairedHTML: String
        if paired.isEmpty {
            pairedHTML = "<p id=\"no-devices\">No phone is paired.</p>"
        } else {
            pairedHTML = "<ul id=\"devices\">" + paired.map { device in
                let seen = device.lastSeenAt.map { " last seen <time>\(formatter.string(from: $0))</time>" } ?? " never seen"
                let from = device.lastAddress.map { " from \(escape($0))" } ?? ""
                return "<li><strong>\(escape(device.name))</strong> <code>\(escape(String(device.id.prefix(8))))</code>"
                    + " paired <time>\(formatter.string(from: device.createdAt))</time>,\(seen)\(from) "
                    + "<button data-revoke=\"\(escape(device.id))\" aria-label=\"Revoke \(escape(device.name))\">Revoke</button></li>"
            }.joined() + "</ul>"
        }
        // The last-seen times change with every request a phone makes: leave them out of the version, or the page
        // would redraw (and lose a button under the pointer) every 2 s.
        let stable = svg + details + pendingHTML + paired.map { $0.id }.joined(separator: ",")
        return Sections(qr: svg, details: details, pending: pendingHTML, devices: pairedHTML, version: digest(stable))
    }

    /// Renders the page for `payload` (its QR code inline as SVG), the pairing code's expiry, pending devices and, when
    /// given, the paired devices (`devices`: every record; pending and revoked ones are left out of that list).
    public static func html(
        payload: PairingPayload, expiresAt: Date?, pending: [DeviceRecord], devices: [DeviceRecord] = []
    ) throws(QRCodeError) -> String {
        let parts = try sections(payload: payload, expiresAt: expiresAt, pending: pending, devices: devices)
        return """
            <!doctype html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <meta name="referrer" content="no-referrer">
            <title>Pair a phone with \(escape(payload.name))</title>
            <style>
            body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 40rem; padding: 0 1rem; color: #111; background: #fff; }
            #qr svg { width: min(90vw, 24rem); height: auto; display: block; }
            dt { font-weight: 600; margin-top: .5rem; } dd { margin: 0; word-break: break-all; }
            button { font: inherit; padding: .3rem .8rem; }
            #live { color: #555; font-size: .9rem; }
            </style>
            </head>
            <body data-version="\(escape(parts.version))">
            <h1>Pair a phone with \(escape(payload.name))</h1>
            <p>Scan this code with the phone's camera: it opens the web app, which pairs by itself. It works once; a new code appears here after each pairing.</p>
            <div id="qr">\(parts.qr)</div>
            <p><button id="new-code">New code</button> <span id="live" role="status">This page updates itself.</span></p>
            <h2>Connection details</h2>
            <dl id="details">
            \(parts.details)
            </dl>
            <h2>Waiting for approval</h2>
            <div id="pending-section" aria-live="polite">\(parts.pending)</div>
            <h2>Paired devices</h2>
            <div id="devices-section">\(parts.devices)</div>
            <script>
            const started = Date.now();
            let timer = null;
            async function poll() {
              clearTimeout(timer);
              if (Date.now() - started > 30 * 60 * 1000) {
                document.getElementById("live").textContent = "This page stopped updating after 30 minutes: reload it.";
                return;
              }
              try {
                const response = await fetch("/api/pair/state", { cache: "no-store" });
                if (response.ok) {
                  const state = await response.json();
                  if (state.version !== document.body.dataset.version) {
                    document.getElementById("qr").innerHTML = state.qr;
                    document.getElementById("details").innerHTML = state.details;
                    document.getElementById("pending-section").innerHTML = state.pending;
                    document.getElementById("devices-section").innerHTML = state.devices;
                    document.body.dataset.version = state.version;
                  }
                  document.getElementById("live").textContent = "This page updates itself.";
                } else {
                  document.getElementById("live").textContent = "The bridge answered " + response.status + "; retrying.";
                }
              } catch {
                document.getElementById("live").textContent = "The bridge does not answer; retrying.";
              }
              if (!document.hidden) timer = setTimeout(poll, 2000);
            }
            document.addEventListener("visibilitychange", () => { if (!document.hidden) poll(); });
            async function post(path, body) {
              const response = await fetch(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body || {}) });
              if (!response.ok) { alert((await response.json()).message || response.statusText); }
              await poll();
            }
            document.getElementById("new-code").onclick = () => post("/api/pair/refresh");
            document.addEventListener("click", (event) => {
              const b = event.target.closest("button");
              if (!b) return;
              if (b.dataset.approve) post("/api/pair/approve", { device_id: b.dataset.approve });
              else if (b.dataset.deny) post("/api/pair/deny", { device_id: b.dataset.deny });
              else if (b.dataset.revoke) post("/api/pair/revoke", { device_id: b.dataset.revoke });
            });
            timer = setTimeout(poll, 2000);
            </script>
            </body>
            </html>
            """
    }

    /// A short hex digest (FNV-1a, 64 bits) of `text`: a version, not a secret.
    static func digest(_ text: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return String(hash, radix: 16)
    }

    /// Escapes text for HTML element content and double-quoted attributes.
    public static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.count)
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(character)
            }
        }
        return out
    }
}
