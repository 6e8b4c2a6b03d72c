// What the bridge sends: session updates (each once, in order, the bridge's record of this page's own prompts not
// twice), its own notifications, and the agent's requests (permission cards). Every byte from the agent is
// untrusted text: it reaches the page through textContent and view.js only.
//
// The agent's words reach this page only as `session/update` (and its requests): the bridge drops any `_oa/*` the
// agent sends (Protocol.md), and the page still acts on the bridge's own notifications only in ways an agent could not
// turn against the user: `_oa/agent_exited` is checked with the bridge before the session is given up, and
// `_oa/prompt_finished` does not end a turn this page is still waiting on.

import { str } from "./dom.js";
import { setRunning } from "./screens.js";
import { checkAgentExited, showPickers, tellLostUpdates } from "./session.js";
import { persistSoon } from "./store.js";

export function onNotification(app, message) {
  const params = message.params || {};
  switch (message.method) {
    case "session/update": {
      if (!app.current || params.sessionId !== app.current.id) return;
      const seq = params._meta && typeof params._meta.seq === "number" ? params._meta.seq : null;
      if (seq !== null && seq <= app.current.lastSeq) return; // already shown: replay overlap
      // Numbered past a hole: the bridge stopped before it stored what came between (a replay and the live updates
      // are otherwise one by one), and the page did not hear it from a resume: said, never skipped over.
      if (seq !== null && app.current.lastSeq > 0 && seq > app.current.lastSeq + 1) tellLostUpdates(app, seq - 1);
      const update = params.update || {};
      const bridge = recordedByBridge(params);
      if (seq !== null) app.current.lastSeq = seq;
      // The bridge's record of a prompt this page sent: shown and kept already (as sent), not a second time.
      if (!(bridge && ownPrompt(app, params._meta.oa.promptId))) {
        applyUpdate(app, update, bridge);
        app.current.log.push(bridge ? { seq, update, bridge } : { seq, update });
      }
      persistSoon(app);
      return;
    }
    case "_oa/user_message": {
      // What another phone (or tab) of this session sent, told by the bridge: shown as a user's words, and kept with
      // the conversation.
      if (!app.current || params.sessionId !== app.current.id || !params.update) return;
      applyUpdate(app, params.update, true);
      app.current.log.push({ seq: null, update: params.update, bridge: true });
      persistSoon(app);
      return;
    }
    case "_oa/request_answered":
      removePermission(app, params.requestId);
      return;
    case "_oa/prompt_finished":
      // Sent when the client that prompted is gone: never about the prompt this page still waits an answer for.
      if (app.current && params.sessionId === app.current.id && app.outbox.prompting !== app.current.id) setRunning(app, false);
      return;
    case "_oa/agent_exited":
      checkAgentExited(app);
      return;
    default:
      return;
  }
}

/** Whether a `session/update` is the bridge's record of a prompt (`_meta.oa.origin` "bridge", beside `seq`). */
export function recordedByBridge(params) {
  const oa = params._meta && params._meta.oa;
  return !!(oa && typeof oa === "object" && oa.origin === "bridge");
}

/** Whether `promptId` (a record's `_meta.oa.promptId`: the id of the `session/prompt` request) is one of this
 * phone's prompts of the current session: each gets an id unique to it (newPromptId), kept in its log entry. */
export function ownPrompt(app, promptId) {
  if (typeof promptId !== "string" || !promptId.startsWith("prompt-")) return false;
  const log = app.current ? app.current.log : [];
  for (let i = log.length - 1, n = 0; i >= 0 && n < 500; i--, n++) if (log[i].promptId === promptId) return true;
  return app.outbox.owns(promptId);
}

export function applyUpdate(app, update, fromBridge = false) {
  switch (update.sessionUpdate) {
    case "available_commands_update":
      app.current.commands = Array.isArray(update.availableCommands) ? update.availableCommands : [];
      return;
    case "current_mode_update":
      if (app.current.modes) app.current.modes.currentModeId = update.currentModeId;
      showPickers(app);
      return;
    default:
      app.ui.transcript.apply(update, fromBridge);
  }
}

export function onRequest(app, message) {
  if (message.method === "session/request_permission") {
    showPermission(app, message);
    return;
  }
  app.conn.send({ jsonrpc: "2.0", id: message.id, error: { code: -32601, message: "the web app does not handle " + String(message.method).slice(0, 100) } });
}

/** The label of each permission option kind (ACP's PermissionOptionKind). */
const KIND_LABELS = { allow_once: "Allow once", allow_always: "Always allow", reject_once: "Reject", reject_always: "Always reject" };

export function permissionKey(id) {
  return JSON.stringify(id);
}

export function showPermission(app, message) {
  const params = message.params || {};
  if (app.current && params.sessionId !== app.current.id) return;
  const key = permissionKey(message.id);
  for (const card of app.ui.permissions.children) if (card.dataset.requestId === key) card.remove();
  const card = document.createElement("section");
  card.className = "permission";
  card.dataset.requestId = key;
  card.setAttribute("role", "group");
  const title = params.toolCall && typeof params.toolCall.title === "string" ? params.toolCall.title : "a tool call";
  const question = document.createElement("p");
  question.textContent = "Permission: " + title;
  card.setAttribute("aria-label", "Permission: " + title);
  const options = document.createElement("div");
  options.className = "options";
  for (const option of Array.isArray(params.options) ? params.options : []) {
    if (!option || typeof option !== "object") continue;
    const button = document.createElement("button");
    button.type = "button";
    // What the button does is its kind, whatever the agent named it: the name is secondary text only.
    const name = str(option.name) || str(option.optionId);
    const kind = KIND_LABELS[str(option.kind)];
    button.append(Object.assign(document.createElement("span"), { className: "kind", textContent: kind || name }));
    if (kind && name.trim().toLowerCase() !== kind.toLowerCase()) {
      button.append(Object.assign(document.createElement("span"), { className: "name", textContent: "“" + name + "”" }));
    }
    button.dataset.kind = kind ? str(option.kind) : "";
    button.addEventListener("click", () => {
      const sent = app.conn && app.conn.respond(message.id, { outcome: { outcome: "selected", optionId: option.optionId } });
      if (sent) card.remove();
    });
    options.append(button);
  }
  card.append(question, options);
  app.ui.permissions.append(card);
}

export function removePermission(app, id) {
  const key = permissionKey(id);
  for (const card of [...app.ui.permissions.children]) if (card.dataset.requestId === key) card.remove();
}
