// Sending prompts so that nothing typed is lost (issue 25.3).
//
// A prompt goes out only over a link just proven alive (an `_oa/ping` answered, Connection.probe), so a prompt is
// never written into a dead link. Typed while the link is down, it waits in the outbox (kept across a reload) and is
// sent once, after the link is back, moved down to where its answer follows. If the link dies after it went out, the
// page asks the bridge after reconnecting whether the prompt arrived (the session's running prompt, an answer that
// finished while away, or anything new in the session, the bridge's record of the prompt included); if it did not,
// the message is shown as not sent, with a Retry button. Nothing is ever sent twice by itself.

import { ConnectionLost } from "./rpc.js";

const KEY = "oa-bridge.outbox";
const STATE_TEXT = {
  queued: "Waiting for the connection: sent once it is back.",
  sending: "Sending…",
  checking: "The connection was lost: checking whether the desktop got this…",
  unsent: "Not sent: the desktop did not get this message.",
};

/** An id of its own for each prompt (the `session/prompt` request's id), which the bridge's record of the prompt
 * names as `_meta.oa.promptId`. */
function newPromptId() {
  return "prompt-" + Date.now().toString(36) + "-" + Math.random().toString(36).slice(2, 10);
}

/** The idempotency key of a typed prompt (`_meta.oa.idempotencyKey`, Protocol.md): made once when it is typed, kept
 * with it over reloads, sent with it every time, so the bridge never runs it twice. */
function newKey() {
  if (globalThis.crypto && typeof crypto.randomUUID === "function") return crypto.randomUUID();
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  return [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
}

export class Outbox {
  /**
   * @param {import("./view.js").Transcript} transcript where the messages show
   * @param {object} hooks
   *   connection(): the Connection, or null; ready(): whether it is initialized and attached;
   *   running(), setRunning(value): whether a prompt of the session runs;
   *   session(): the current session ({id, log, lastSeq}) or null; newSession(connection): starts one;
   *   persist(): stores the current session.
   */
  constructor(transcript, hooks) {
    this.transcript = transcript;
    this.hooks = hooks;
    this.items = []; // [{prompt, entry, node}] in order; entry = {user, state, at, promptId?}
    this.inflight = null; // the prompt sent and not answered yet: {entry, node, prompt, session, seq, lost}
    this.prompting = null; // the session id of this page's session/prompt call while it waits for its answer
    this.flushing = false;
  }

  get length() {
    return this.items.length;
  }

  /** A prompt the user sent: shown at once, then sent when the link allows. */
  submit(prompt) {
    // Stored without the photo's bytes (they would fill the storage); the transcript keeps a marker.
    const user = prompt.map((b) => (b.type === "image" ? { type: "text", text: "[photo]\n" } : b));
    const entry = { user, state: "queued", at: Date.now(), key: newKey() };
    const node = this.transcript.user(prompt);
    this.items.push({ prompt, entry, node });
    this.mark(node, entry);
    this.save();
    this.flush();
  }

  /** Sends the waiting prompts, oldest first, one turn at a time, while the link is up and no prompt runs. */
  async flush() {
    if (this.flushing) return;
    this.flushing = true;
    try {
      for (let i = 0; i < 100; i++) {
        const item = this.items.find((o) => o.entry.state === "queued");
        if (!item || !this.hooks.ready() || !this.hooks.connection() || this.hooks.running() || this.inflight) return;
        if (!(await this.deliver(item))) return;
      }
    } finally {
      this.flushing = false;
    }
  }

  /** Sends one prompt; true when its turn ended here (answered), false when it waits for the link or a check. */
  async deliver(item) {
    const connection = this.hooks.connection();
    this.setState(item, "sending");
    try {
      await connection.probe(); // any answer proves the link alive, an error answer too
    } catch (error) {
      if (error instanceof ConnectionLost) {
        this.setState(item, "queued");
        return false;
      }
    }
    if (!this.hooks.session()) {
      try {
        await this.hooks.newSession(connection);
      } catch (error) {
        if (error instanceof ConnectionLost) {
          this.setState(item, "queued");
          return false;
        }
        this.setState(item, "unsent");
        this.transcript.system("Could not start a session: " + String(error.message).slice(0, 200));
        return false;
      }
    }
    const current = this.hooks.session();
    if (this.hooks.connection() !== connection || !this.hooks.ready() || !current) {
      this.setState(item, "queued");
      return false;
    }
    // From here on the prompt is the session's: it leaves the outbox for the conversation.
    this.items.splice(this.items.indexOf(item), 1);
    delete item.entry.state;
    item.entry.promptId = newPromptId();
    current.log.push(item.entry);
    this.mark(item.node, item.entry);
    this.transcript.moveToEnd(item.node);
    this.hooks.persist();
    this.save();
    const session = current.id;
    this.inflight = { entry: item.entry, node: item.node, prompt: item.prompt, session, seq: current.lastSeq, lost: false };
    this.prompting = session;
    this.hooks.setRunning(true);
    try {
      if (!item.entry.key) item.entry.key = newKey();
      const params = { sessionId: session, prompt: item.prompt, _meta: { oa: { idempotencyKey: item.entry.key } } };
      const result = await connection.call("session/prompt", params, item.entry.promptId);
      this.inflight = null;
      if (this.isCurrent(session)) {
        this.hooks.setRunning(false);
        const reason = result && result.stopReason;
        if (reason === "cancelled") this.transcript.system("Stopped.");
        else if (reason && reason !== "end_turn") this.transcript.system("The agent stopped: " + String(reason).slice(0, 100) + ".");
      }
    } catch (error) {
      if (error instanceof ConnectionLost) {
        // It went out: it may or may not have reached the desktop. Settled after reconnecting (settle).
        if (this.inflight) {
          this.inflight.lost = true;
          this.nodeState(this.inflight.node, "checking");
        }
        return false;
      }
      this.inflight = null;
      if (this.isCurrent(session)) {
        this.hooks.setRunning(false);
        this.transcript.system("The agent answered with an error: " + String(error.message).slice(0, 300));
      }
    } finally {
      if (this.prompting === session) this.prompting = null;
    }
    return true;
  }

  isCurrent(session) {
    const current = this.hooks.session();
    return !!current && current.id === session;
  }

  /** After reconnecting and attaching (`resumed`: what `_oa/session/resume` said, or null): did the prompt that was
   * out when the link died reach the desktop? If not, it is shown as not sent, with Retry. */
  settle(resumed) {
    const item = this.inflight;
    if (!item || !item.lost) return;
    this.inflight = null;
    const current = this.hooks.session();
    const same = !!current && current.id === item.session;
    const arrived = same && ((resumed && resumed.session === item.session && (resumed.promptRunning || resumed.finishedWhileAway))
      || current.lastSeq > item.seq);
    if (arrived) {
      this.nodeState(item.node, null);
      return;
    }
    // Not there: back from the conversation to the outbox, as not sent (the user decides to send it again).
    if (same) {
      const index = current.log.indexOf(item.entry);
      if (index !== -1) current.log.splice(index, 1);
      this.hooks.persist();
    }
    item.entry.state = "unsent";
    this.items.push({ prompt: item.prompt, entry: item.entry, node: item.node });
    this.mark(item.node, item.entry);
    this.save();
  }

  /** Whether `promptId` is the prompt this page has out. */
  owns(promptId) {
    return !!(this.inflight && this.inflight.entry.promptId === promptId);
  }

  /** Forgets everything (unpaired). */
  clear() {
    this.items = [];
    this.inflight = null;
    this.prompting = null;
  }

  setState(item, state) {
    item.entry.state = state;
    this.mark(item.node, item.entry);
    this.save();
  }

  /** Shows an entry's state under its message: the line, and Retry for a message not sent. */
  mark(node, entry) {
    this.nodeState(node, entry.state || null, () => {
      const item = this.items.find((i) => i.entry === entry);
      if (!item) return;
      this.setState(item, "queued");
      this.flush();
    });
  }

  nodeState(node, state, retry) {
    if (!node) return;
    let line = node.querySelector(":scope > .state");
    if (!state) {
      if (line) line.remove();
      delete node.dataset.state;
      return;
    }
    node.dataset.state = state;
    if (!line) {
      line = document.createElement("span");
      line.className = "state";
      node.append(line);
    }
    line.replaceChildren(STATE_TEXT[state] || state);
    if (state === "unsent" && retry) {
      const button = document.createElement("button");
      button.type = "button";
      button.textContent = "Retry";
      button.addEventListener("click", retry);
      line.append(button);
    }
  }

  save() {
    const items = this.items.map((i) => ({ user: i.entry.user, state: i.entry.state === "sending" ? "queued" : i.entry.state, at: i.entry.at, key: i.entry.key }));
    try {
      if (items.length) localStorage.setItem(KEY, JSON.stringify(items));
      else localStorage.removeItem(KEY);
    } catch {
      // storage full: the outbox stays in memory
    }
  }

  /** The outbox kept over a reload: shown after the conversation, and sent once the link is up. */
  restore() {
    this.items = [];
    let items = [];
    try {
      items = JSON.parse(localStorage.getItem(KEY) || "[]");
    } catch {
      items = [];
    }
    for (const stored of Array.isArray(items) ? items.slice(0, 50) : []) {
      if (!stored || !Array.isArray(stored.user)) continue;
      const key = typeof stored.key === "string" && stored.key.length >= 1 && stored.key.length <= 128 ? stored.key : newKey();
      const entry = { user: stored.user, state: stored.state === "unsent" ? "unsent" : "queued", at: Number(stored.at) || Date.now(), key };
      const node = this.transcript.user(entry.user);
      this.items.push({ prompt: entry.user, entry, node });
      this.mark(node, entry);
    }
  }
}
