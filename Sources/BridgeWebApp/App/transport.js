// The Streamable HTTP profile of ACP's remote-transport RFD at /acp, behind the small part of the WebSocket interface
// that rpc.js uses (readyState, send, close, onopen, onmessage, onclose): the web app's fallback when its WebSocket
// cannot open (iOS Safari refuses wss:// to a certificate the user accepted for the page, while fetch works).
//
// Client messages are POSTed one after another (in order, like frames on a socket); `initialize` opens the
// connection (its answer is the POST's body, with Acp-Connection-Id). Server messages come on SSE streams read with
// fetch (EventSource cannot send headers): the connection's stream, and each session's once a message names it.
// A stream that drops is read again after the last event it gave (Last-Event-ID); a connection the bridge no longer
// knows closes this "socket", and rpc.js reconnects as it does after a WebSocket's close.

const CONNECTING = 0;
const OPEN = 1;
const CLOSED = 3;

/** Methods whose POST names their session in Acp-Session-Id (the RFD's session-scoped methods). */
const SESSION_SCOPED = new Set([
  "session/prompt", "session/cancel", "session/set_mode", "session/set_config_option", "session/set_model",
  "session/close",
]);

/** How often a dropped stream is read again before the connection counts as lost. */
const STREAM_RETRIES = 3;

function sessionOf(message) {
  const from = (value) => (value && typeof value === "object" && typeof value.sessionId === "string" ? value.sessionId : null);
  return from(message.params) || from(message.result);
}

export class HTTPStreamSocket {
  /**
   * @param {string} url the endpoint, e.g. "/acp"
   * @param {string|null} token the access token (sent as Authorization: Bearer), or null without auth
   * @param {function|null} fetcher what sends the requests instead of fetch() (a DPoP-bound token's, which replaces
   *   the Authorization header and adds a proof to each request), or null
   */
  constructor(url, token, fetcher = null) {
    this.url = url;
    this.token = token;
    this.fetch = fetcher || ((resource, init) => fetch(resource, init));
    this.readyState = CONNECTING;
    this.connectionId = null;
    this.onopen = null;
    this.onmessage = null;
    this.onclose = null;
    this.streams = new Map(); // "" for the connection's stream, else the session id → { abort, lastEventId }
    this.chain = Promise.resolve();
    this.aborter = new AbortController();
    // Nothing to open before the first POST: the "socket" is usable at once (initialize is the first message).
    setTimeout(() => {
      if (this.readyState !== CONNECTING) return;
      this.readyState = OPEN;
      if (this.onopen) this.onopen({});
    }, 0);
  }

  headers(extra) {
    const headers = { ...extra };
    if (this.token) headers.Authorization = "Bearer " + this.token;
    if (this.connectionId) headers["Acp-Connection-Id"] = this.connectionId;
    return headers;
  }

  send(text) {
    if (this.readyState !== OPEN) throw new Error("not open");
    // In order, like frames: each POST waits for the one before it (answers come on the streams anyway).
    this.chain = this.chain.then(() => this.post(text)).catch(() => {});
  }

  async post(text) {
    if (this.readyState !== OPEN) return;
    let message = null;
    try {
      message = JSON.parse(text);
    } catch {
      return;
    }
    const initialize = message && message.method === "initialize" && !this.connectionId;
    const extra = { "Content-Type": "application/json" };
    const session = message && SESSION_SCOPED.has(message.method) ? sessionOf(message) : null;
    if (session) extra["Acp-Session-Id"] = session;
    let response;
    try {
      response = await this.fetch(this.url, {
        method: "POST", headers: this.headers(extra), body: text, cache: "no-store", credentials: "omit",
        signal: this.aborter.signal,
      });
    } catch {
      this.shut(1006, "the bridge could not be reached over HTTP");
      return;
    }
    if (initialize && response.status === 200) {
      const id = response.headers.get("Acp-Connection-Id");
      const body = await response.text().catch(() => "");
      if (!id) {
        this.deliver(body);
        this.shut(1011, "initialize failed");
        return;
      }
      this.connectionId = id;
      this.openStream("");
      this.deliver(body);
      return;
    }
    if (response.status === 202 || response.status === 200) return;
    if (response.status >= 400 && response.status < 500 && ![401, 403, 404].includes(response.status)
        && message && message.id !== undefined && message.id !== null && typeof message.method === "string") {
      // Refused as bad input: the caller gets an error answer instead of waiting for one that never comes.
      const detail = await response.json().catch(() => ({}));
      this.deliver(JSON.stringify({ jsonrpc: "2.0", id: message.id, error: {
        code: -32600, message: "HTTP " + response.status + (detail && detail.error ? ": " + detail.error : "") } }));
      return;
    }
    if (response.status === 401) this.shut(4001, "access token expired; refresh and reconnect");
    else if (response.status === 404 && !session) this.shut(4404, "the bridge no longer knows this connection");
    else if (response.status >= 500 || response.status === 403 || response.status === 404) {
      this.shut(1011, "HTTP " + response.status);
    }
  }

  deliver(body) {
    if (this.readyState !== OPEN || !body) return;
    let message = null;
    try {
      message = JSON.parse(body);
    } catch {
      message = null;
    }
    // A message naming a session this connection has no stream of yet opens that session's stream.
    if (message && typeof message === "object" && !Array.isArray(message)) {
      const session = sessionOf(message);
      if (session && !this.streams.has(session) && this.connectionId) this.openStream(session);
    }
    if (this.onmessage) this.onmessage({ data: body });
  }

  /** Reads the stream of `session` ("" for the connection's) until it ends; reads it again after a drop. */
  openStream(session) {
    const stream = { lastEventId: null, retries: 0 };
    this.streams.set(session, stream);
    this.readStream(session, stream);
  }

  async readStream(session, stream) {
    while (this.readyState === OPEN) {
      const extra = { Accept: "text/event-stream" };
      if (session) extra["Acp-Session-Id"] = session;
      if (stream.lastEventId !== null) extra["Last-Event-ID"] = stream.lastEventId;
      let response;
      try {
        response = await this.fetch(this.url, {
          method: "GET", headers: this.headers(extra), cache: "no-store", credentials: "omit", signal: this.aborter.signal,
        });
      } catch {
        response = null;
      }
      if (this.readyState !== OPEN) return;
      if (response && response.status === 404 && !session) {
        this.shut(4404, "the bridge no longer knows this connection");
        return;
      }
      if (response && response.status === 401) {
        this.shut(4001, "access token expired; refresh and reconnect");
        return;
      }
      if (response && response.ok && response.body) {
        stream.retries = 0;
        try {
          await this.readEvents(response.body, stream);
        } catch {
          // dropped: read it again below
        }
        if (this.readyState !== OPEN) return;
      }
      stream.retries++;
      if (stream.retries > STREAM_RETRIES) {
        if (!session) this.shut(1006, "the bridge's event stream keeps dropping");
        else this.streams.delete(session);
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 250 * stream.retries));
    }
  }

  async readEvents(body, stream) {
    const reader = body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    let data = [];
    let id = null;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      let newline;
      while ((newline = buffer.indexOf("\n")) >= 0) {
        let line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 1);
        if (line.endsWith("\r")) line = line.slice(0, -1);
        if (line === "") {
          if (id !== null) stream.lastEventId = id;
          if (data.length) this.deliver(data.join("\n"));
          data = [];
          id = null;
        } else if (line.startsWith("data:")) {
          data.push(line.slice(line.startsWith("data: ") ? 6 : 5));
        } else if (line.startsWith("id:")) {
          id = line.slice(3).trim();
        }
        // comments (":") and retry: are not needed here
      }
      if (this.readyState !== OPEN) {
        reader.cancel().catch(() => {});
        return;
      }
    }
  }

  close(code = 1000, reason = "") {
    if (this.readyState === CLOSED) return;
    const id = this.connectionId;
    if (id) {
      // Tells the bridge at once (keepalive: the request outlives a page being closed).
      this.fetch(this.url, { method: "DELETE", headers: this.headers({}), keepalive: true, credentials: "omit" }).catch(() => {});
    }
    this.shut(code, reason);
  }

  shut(code, reason) {
    if (this.readyState === CLOSED) return;
    this.readyState = CLOSED;
    this.aborter.abort();
    setTimeout(() => {
      if (this.onclose) this.onclose({ code, reason });
    }, 0);
  }
}
