import BridgePairing
import Foundation

/// The HTML of `GET /pair`: the QR code (the web app URL), the manual details, the devices waiting for approval and
/// the paired devices.
///
/// The page is self-contained (inline SVG, inline CSS and a few lines of script); its buttons call
/// `POST /api/pair/refresh`, `POST /api/pair/approve`, `/api/pair/deny` and `/api/pair/revoke` with JSON bodies, then
/// reload.
public enum PairingPage {
    /// Renders the page for `payload` (its QR code inline as SVG), the pairing code's expiry, pending devices and, when
    /// given, the paired devices (`devices`: every record; pending and revoked ones are left out of that list).
    public static func html(
        payload: PairingPayload, expiresAt: Date?, pending: [DeviceRecord], devices: [DeviceRecord] = []
    ) throws(QRCodeError) -> String {
        let svg = try payload.qrCode().svgString(quietZone: 4, pixelsPerModule: 6)
        let formatter = ISO8601DateFormatter()
        var details = """
            <dt>Phone web app</dt><dd><code id="app-url">\(escape(payload.appURL))</code></dd>
            <dt>Name</dt><dd>\(escape(payload.name))</dd>
            <dt>HTTP</dt><dd><code>\(escape(payload.http))</code></dd>
            <dt>WebSocket</dt><dd><code>\(escape(payload.ws))</code></dd>
            """
        if let token = payload.token {
            details += "\n<dt>Pairing code</dt><dd><code id=\"token\">\(escape(token))</code></dd>"
            if let expiresAt {
                details += "\n<dt>Expires</dt><dd><time datetime=\"\(formatter.string(from: expiresAt))\">\(formatter.string(from: expiresAt))</time> (single use)</dd>"
            }
        } else {
            details += "\n<dt>Authentication</dt><dd><strong>off</strong> (--auth none): only allowed networks may connect</dd>"
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
            </style>
            </head>
            <body>
            <h1>Pair a phone with \(escape(payload.name))</h1>
            <p>Scan this code with the phone's camera: it opens the web app, which pairs by itself (the oa-bridge app reads it too). It works once; a new code appears after each pairing.</p>
            <div id="qr">\(svg)</div>
            <p><button id="new-code">New code</button></p>
            <h2>Connection details</h2>
            <dl>
            \(details)
            </dl>
            <h2>Waiting for approval</h2>
            \(pendingHTML)
            <h2>Paired devices</h2>
            \(pairedHTML)
            <script>
            async function post(path, body) {
              const response = await fetch(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body || {}) });
              if (!response.ok) { alert((await response.json()).message || response.statusText); }
              location.reload();
            }
            document.getElementById("new-code").onclick = () => post("/api/pair/refresh");
            for (const b of document.querySelectorAll("[data-approve]")) b.onclick = () => post("/api/pair/approve", { device_id: b.dataset.approve });
            for (const b of document.querySelectorAll("[data-deny]")) b.onclick = () => post("/api/pair/deny", { device_id: b.dataset.deny });
            for (const b of document.querySelectorAll("[data-revoke]")) b.onclick = () => post("/api/pair/revoke", { device_id: b.dataset.revoke });
            </script>
            </body>
            </html>
            """
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
