// JSON-RPC 2.0 over the bridge's WebSocket (same origin), with reconnection: backoff 0.5 s doubling to 15 s with
// jitter, at once when the browser comes back online or the page becomes visible. A heartbeat (heartbeat.js) finds a
// dead link that the browser still thinks open, and drops it.

import { Heartbeat } from "./heartbeat.js";
import { HTTPStreamSocket } from "./transport.js";

/** WebSocket attempts in a row that never opened before the connection falls back to Streamable HTTP at /acp. */
const WEBSOCKET_FAILURES_BEFORE_HTTP = 2;

/** Thrown to callers whose request was in flight when the connection dropped. */
export class ConnectionLost extends Error {}

/** A JSON-RPC error answer: `code`, `message`, `data`. */
export class RPCError extends Error {
  constructor(error) {
    super(error && error.message ? error.message : "error");
    this.code = error ? error.code : 0;
    this.data = error ? error.data : undefined;
  }
}

export class Connection {
  /**
   * @param {object} hooks
   *   token(): the access token to connect with (may refresh first), or null without auth;
   *   upgradeProof(url, token): the DPoP proof for the upgrade (sent as &dpop=), or null for an unbound token;
   *   fetcher(token): the fetch() the Streamable HTTP fallback sends `token` with (DPoP), or null for Bearer;
   *   opened(conn): after the socket opens (send initialize and resume there); throw to drop the connection;
   *   request(msg), notification(msg): what the bridge sends;
   *   state(name, detail): "connecting" | "connected" | "reconnecting" | "offline" | "stopped";
   *   closed(code, reason, wasOpen): return "stop" to stop reconnecting (code 4900: the heartbeat found the link
   *   dead).
   */
  constructor(path, hooks) {
    this.path = path || "/";
    this.hooks = hooks;
    this.socket = null;
    this.pending = new Map();
    this.nextId = 1;
    this.attempt = 0;
    this.timer = 0;
    this.stopped = false;
    this.ready = false;
    // "websocket", or "http" (Streamable HTTP at /acp) once the WebSocket kept failing to open.
    this.transport = "websocket";
    this.webSocketFailures = 0;
    this.heartbeat = new Heartbeat(() => this.call("_oa/ping", {}), () => this.dead());
    addEventListener("online", () => this.now());
    addEventListener("offline", () => {
      // A phone that lost its network: drop the socket at once rather than wait for a dead TCP connection.
      if (this.socket) this.socket.close();
      this.setState("offline");
    });
    document.addEventListener("visibilitychange", () => {
      if (document.visibilityState === "visible") this.check();
    });
  }

  setState(name, detail) {
    this.hooks.state(name, detail);
  }

  /** Connects now (cancelling a scheduled retry). */
  now() {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = 0;
    if (!this.socket) this.open();
  }

  async open() {
    if (this.stopped || this.socket) return;
    if (navigator.onLine === false) {
      this.setState("offline");
      return;
    }
    this.setState(this.attempt ? "reconnecting" : "connecting");
    let token = null;
    try {
      token = await this.hooks.token();
    } catch (error) {
      if (this.hooks.closed(0, error, false) !== "stop") this.retry();
      return;
    }
    if (this.stopped || this.socket) return;
    let socket;
    if (this.transport === "http") {
      socket = new HTTPStreamSocket("/acp", token, token && this.hooks.fetcher ? this.hooks.fetcher(token) : null);
    } else {
      const scheme = location.protocol === "https:" ? "wss:" : "ws:";
      let query = token ? "?token=" + encodeURIComponent(token) : "";
      if (token && this.hooks.upgradeProof) {
        // A bound token's proof (DPoP): htm GET, htu the page's scheme (https:/http:), host and the path.
        let proof = null;
        try {
          proof = await this.hooks.upgradeProof(location.protocol + "//" + location.host + this.path, token);
        } catch (error) {
          if (this.hooks.closed(0, error, false) !== "stop") this.retry();
          return;
        }
        if (this.stopped || this.socket) return;
        if (proof) query += "&dpop=" + encodeURIComponent(proof);
      }
      socket = new WebSocket(scheme + "//" + location.host + this.path + query);
    }
    this.socket = socket;
    let wasOpen = false;
    socket.onopen = async () => {
      wasOpen = true;
      if (this.socket === socket) this.heartbeat.start();
      try {
        await this.hooks.opened(this);
        this.attempt = 0;
        this.ready = true;
        this.setState("connected");
      } catch (error) {
        if (!(error instanceof ConnectionLost)) console.warn("oa-bridge: after connecting:", error && error.message);
        socket.close(4000, "client setup failed");
      }
    };
    socket.onmessage = (event) => {
      if (this.socket !== socket) return; // a socket given up as dead: whatever it still brings is not trusted
      this.heartbeat.alive();
      this.receive(event.data);
    };
    socket.onclose = (event) => this.lost(socket, event.code, event.reason, wasOpen);
  }

  /** The socket is gone (closed, or given up as dead): fail what waited on it, then reconnect by the rules. */
  lost(socket, code, reason, wasOpen) {
    if (this.socket !== socket) return;
    this.socket = null;
    this.ready = false;
    this.heartbeat.stop();
    for (const { reject } of this.pending.values()) reject(new ConnectionLost("connection lost"));
    this.pending.clear();
    if (this.stopped) return;
    // A WebSocket that keeps failing to open (a proxy, or iOS Safari refusing wss:// to a self-signed certificate
    // the page itself was accepted with): the same bridge over Streamable HTTP, from the next attempt on.
    if (this.transport === "websocket") {
      this.webSocketFailures = wasOpen ? 0 : this.webSocketFailures + 1;
      if (this.webSocketFailures >= WEBSOCKET_FAILURES_BEFORE_HTTP) {
        console.warn("oa-bridge: the WebSocket does not open; falling back to Streamable HTTP at /acp");
        this.transport = "http";
        this.attempt = 0;
      }
    }
    const verdict = this.hooks.closed(code, reason, wasOpen);
    if (verdict === "stop") return;
    if (verdict === "now") { this.attempt = 0; this.open(); return; }
    if (navigator.onLine === false) { this.setState("offline"); return; }
    this.retry();
  }

  /** The heartbeat heard nothing: give the socket up at once (a close handshake over a dead link could take a
   * minute) and reconnect. */
  dead() {
    const socket = this.socket;
    if (!socket) return;
    console.warn("oa-bridge: no answer from the desktop for 10 s; reconnecting");
    try {
      socket.close(4000, "heartbeat: no answer");
    } catch {
      // closing a socket that is still connecting throws in some browsers; it is dropped below all the same
    }
    this.lost(socket, 4900, "no answer", true);
  }

  retry() {
    if (this.stopped || this.timer) return;
    const base = Math.min(15_000, 500 * 2 ** Math.min(this.attempt, 5));
    const delay = Math.round(base / 2 + Math.random() * base / 2);
    this.attempt++;
    this.setState("reconnecting", delay);
    this.timer = setTimeout(() => { this.timer = 0; this.open(); }, delay);
  }

  /** After the phone wakes: an idle socket may be dead without the browser knowing. Ask something small. */
  async check() {
    if (!this.socket) { this.now(); return; }
    if (!this.ready) return;
    const socket = this.socket;
    const answered = await Promise.race([
      this.call("_oa/ping", {}).then(() => true, (e) => !(e instanceof ConnectionLost)),
      new Promise((resolve) => setTimeout(() => resolve(false), 4000)),
    ]);
    if (!answered && this.socket === socket) this.dead();
  }

  stop() {
    this.stopped = true;
    this.heartbeat.stop();
    clearTimeout(this.timer);
    if (this.socket) this.socket.close(1000, "bye");
    this.setState("stopped");
  }

  /** Asks `_oa/ping` now, through the heartbeat: the link is declared dead if no answer comes in time. Resolves
   * with the answer (rejects with RPCError for an error answer, which still proves the link alive). */
  probe() {
    if (!this.socket) return Promise.reject(new ConnectionLost("not connected"));
    return this.heartbeat.probe();
  }

  /** Closes the socket; it reconnects by the usual rules. */
  drop() {
    if (this.socket) this.socket.close(1000, "reconnect");
  }

  send(message) {
    if (!this.socket || this.socket.readyState !== 1) throw new ConnectionLost("not connected"); // 1: OPEN, either transport
    this.socket.send(JSON.stringify(message));
  }

  /** Sends a request and resolves with its result. `id`: the request's id when the caller needs to know it (a
   * prompt's, which the bridge's record of the prompt names); a number of this connection's own otherwise. */
  call(method, params, id = this.nextId++) {
    return new Promise((resolve, reject) => {
      try {
        this.send({ jsonrpc: "2.0", id, method, params });
      } catch (error) {
        reject(error);
        return;
      }
      this.pending.set(id, { resolve, reject });
    });
  }

  notify(method, params) {
    this.send({ jsonrpc: "2.0", method, params });
  }

  respond(id, result) {
    try {
      this.send({ jsonrpc: "2.0", id, result });
      return true;
    } catch {
      return false;
    }
  }

  receive(data) {
    let message;
    try {
      message = JSON.parse(data);
    } catch {
      return;
    }
    for (const one of Array.isArray(message) ? message : [message]) {
      if (!one || typeof one !== "object") continue;
      if (typeof one.method === "string") {
        if (one.id !== undefined && one.id !== null) this.hooks.request(one);
        else this.hooks.notification(one);
      } else if (one.id !== undefined && this.pending.has(one.id)) {
        const { resolve, reject } = this.pending.get(one.id);
        this.pending.delete(one.id);
        if (one.error) reject(new RPCError(one.error));
        else resolve(one.result);
      }
    }
  }
}
