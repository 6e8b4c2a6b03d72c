// oa-bridge's phone web app: pairs from the QR code's URL fragment, then drives the agent over the bridge's
// WebSocket (ACP v1, camelCase). Everything the agent sends is untrusted text (see view.js and markdown.js).

import * as auth from "./auth.js";
import { Connection, ConnectionLost, RPCError } from "./rpc.js";
import { Transcript } from "./view.js";

const $ = (id) => document.getElementById(id);
const SESSION_KEY = "oa-bridge.session";
const sessionKey = (id) => "oa-bridge.s." + id;
const MAX_LOG_CHARS = 3_000_000;

const ui = {
  transcript: new Transcript($("transcript")),
  message: $("message"),
  send: $("send"),
  stop: $("stop"),
  attach: $("attach"),
  photo: $("photo"),
  permissions: $("permissions"),
  commands: $("commands"),
  attachments: $("attachments"),
  notice: $("notice"),
};

let conn = null;
let agent = { capabilities: {}, workingDirectory: undefined, info: {} };
let current = null; // {id, lastSeq, modes, models, commands, log, updated}
let running = false;
let ready = false;
let refused = null; // an access token the bridge refused (4001): refresh it before the next connection
let attachments = []; // [{mimeType, data, url}]
let refreshTimer = 0;
let saveTimer = 0;

// MARK: - Screens and state

function show(name) {
  for (const screen of document.querySelectorAll(".screen")) screen.hidden = screen.id !== "screen-" + name;
  $("sessions-button").hidden = name !== "chat";
}

const STATES = {
  idle: "Starting…", connecting: "Connecting…", connected: "Connected", reconnecting: "Reconnecting…",
  offline: "Offline", stopped: "Disconnected", pairing: "Pairing…", waiting: "Waiting for approval", unpaired: "Unpaired",
  failed: "Not connected",
};

function setConnection(name, detail) {
  const node = $("connection");
  node.dataset.state = name;
  let text = STATES[name] || name;
  if (name === "reconnecting" && typeof detail === "number" && detail >= 1000) text = "Reconnecting in " + Math.round(detail / 1000) + " s";
  node.textContent = text;
  if (name !== "connected") setReady(false);
}

function setReady(value) {
  ready = value;
  ui.message.disabled = !value;
  updateButtons();
  if (value && !document.documentElement.dataset.readyMs) {
    performance.mark("oa-ready");
    document.documentElement.dataset.readyMs = String(Math.round(performance.now()));
  }
  document.documentElement.dataset.ready = value ? "true" : "false";
}

function setRunning(value) {
  running = value;
  updateButtons();
}

function updateButtons() {
  ui.send.disabled = !ready || running;
  ui.stop.hidden = !running;
  ui.send.hidden = running;
}

function fail(message) {
  $("error-text").textContent = message;
  setConnection("failed");
  show("error");
}

function unpaired() {
  if (conn) conn.stop();
  conn = null;
  clearTimeout(refreshTimer);
  auth.forget();
  current = null;
  ui.transcript.clear();
  ui.permissions.replaceChildren();
  setConnection("unpaired");
  show("unpaired");
}

function removeFragment() {
  if (location.hash) history.replaceState(null, "", location.pathname + location.search);
}

// MARK: - Boot and pairing

async function boot() {
  const payload = auth.payloadFromFragment(location.hash);
  const state = auth.load();
  if (payload) {
    // Typed as http:// on a bridge that speaks TLS: go to https:// before the token travels (the bridge refuses it
    // in clear from the LAN anyway). The fragment stays in the browser.
    const loopback = /^(127\.|\[::1\]$|localhost$)/.test(location.hostname);
    if (location.protocol === "http:" && !loopback && /^https:/.test(str(payload.http))) {
      location.replace("https://" + location.host + location.pathname + location.hash);
      return undefined;
    }
    const wsPath = wsPathOf(payload);
    if (typeof payload.token !== "string") {
      auth.save({ noAuth: true, name: str(payload.name), wsPath });
      removeFragment();
      return startChat();
    }
    if (state && state.tokens) {
      removeFragment();
      return startChat();
    }
    return pair(payload.token, str(payload.name), wsPath, null);
  }
  if (state && (state.tokens || state.noAuth)) return startChat();
  if (state && state.pending) return pair(state.pending.token, state.name, state.wsPath, state.pending.deviceId);
  if (location.hash) {
    removeFragment();
    return fail("This link is damaged: it does not hold a pairing code. Scan the QR code on the desktop again.");
  }
  setConnection("failed");
  show("nopair");
}

function wsPathOf(payload) {
  try {
    return new URL(payload.ws).pathname || "/";
  } catch {
    return "/";
  }
}

function str(value) {
  return typeof value === "string" ? value : "";
}

async function pair(pairingToken, bridgeName, wsPath, deviceId) {
  if (bridgeName) $("bridge-name").textContent = bridgeName;
  setConnection("pairing");
  show("pairing");
  $("pairing-text").textContent = "Pairing this phone with " + (bridgeName || "the desktop") + "…";
  const name = await auth.deviceName();
  let pending = deviceId;
  for (let attempt = 0; attempt < 3000; attempt++) {
    let result;
    try {
      result = await auth.exchange(pairingToken, name, pending);
    } catch (error) {
      if (error instanceof auth.AuthError) {
        auth.forget();
        removeFragment();
        if (error.code === "pairing_token_used" || error.code === "token_expired" || error.code === "token_revoked") {
          return fail("This pairing code was already used or has expired. Show a new one on the desktop (oa-bridge pair --new) and scan it again.");
        }
        if (error.code === "device_revoked") return unpaired();
        if (error.status === 429) return fail("Too many attempts from this network. Wait a minute and scan the code again.");
        return fail("The desktop refused to pair (" + (error.code || error.status) + "). Scan a new QR code on the desktop.");
      }
      // The network: keep the fragment and try again shortly.
      setConnection("offline");
      await sleep(2000);
      continue;
    }
    if (result.tokens) {
      performance.mark("oa-paired");
      auth.save({ tokens: result.tokens, name: bridgeName, wsPath });
      removeFragment();
      return startChat();
    }
    pending = result.pending;
    auth.save({ pending: { token: pairingToken, deviceId: pending }, name: bridgeName, wsPath });
    removeFragment();
    setConnection("waiting");
    $("waiting-name").textContent = name;
    $("waiting-command").textContent = "oa-bridge devices approve " + String(pending).slice(0, 8);
    show("waiting");
    await sleep(1500);
  }
  return fail("Nobody approved this phone on the desktop. Scan the QR code again to retry.");
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// MARK: - Tokens

function scheduleRefresh() {
  clearTimeout(refreshTimer);
  const state = auth.load();
  if (!state || !state.tokens) return;
  const wait = Math.max(5_000, state.tokens.accessExp - Date.now() - auth.REFRESH_MARGIN_MS + 1_000);
  refreshTimer = setTimeout(refreshNow, Math.min(wait, 2_000_000_000));
}

async function refreshNow() {
  try {
    await auth.fresh();
  } catch (error) {
    if (error instanceof auth.AuthError && error.unpaired) return unpaired();
    // The network or the bridge is away: try again in a while; the connection's own attempts refresh too.
    refreshTimer = setTimeout(refreshNow, 15_000);
    return;
  }
  scheduleRefresh();
}

async function accessToken() {
  const state = auth.load();
  if (!state) throw new auth.AuthError(401, "not_paired");
  if (state.noAuth) return null;
  const tokens = await auth.fresh(refused);
  refused = null;
  scheduleRefresh();
  return tokens.access;
}

/** After a failed or refused connection: is the device still paired? Unpairs when the bridge says it is not. */
async function diagnose() {
  const state = auth.load();
  if (!state || !state.tokens) return;
  let response;
  try {
    response = await fetch("/api/me", { headers: { Authorization: "Bearer " + state.tokens.access }, cache: "no-store" });
  } catch {
    return; // the network: the connection retries
  }
  if (response.status !== 401 && response.status !== 403) return;
  try {
    await auth.fresh(state.tokens.access);
  } catch (error) {
    if (error instanceof auth.AuthError && error.unpaired) unpaired();
  }
}

// MARK: - The connection

function startChat() {
  const state = auth.load() || {};
  if (state.name) $("bridge-name").textContent = state.name;
  show("chat");
  restoreCurrent();
  conn = new Connection(state.wsPath || "/", {
    token: accessToken,
    opened: onOpened,
    request: onRequest,
    notification: onNotification,
    state: setConnection,
    closed: (code, reason, wasOpen) => {
      if (code === 4003) {
        unpaired();
        return "stop";
      }
      if (reason instanceof auth.AuthError) {
        if (reason.unpaired) {
          unpaired();
          return "stop";
        }
        return undefined;
      }
      if (code === 4001) {
        refused = (auth.load() || {}).tokens?.access || null;
        return "now";
      }
      if (!wasOpen) diagnose();
      return undefined;
    },
  });
  conn.open();
}

async function onOpened(connection) {
  performance.mark("oa-open");
  const init = await connection.call("initialize", {
    protocolVersion: 1,
    clientCapabilities: {},
    clientInfo: { name: "oa-bridge-web", title: "oa-bridge web app", version: "0.1.0" },
  });
  agent = {
    capabilities: (init && init.agentCapabilities) || {},
    workingDirectory: init && init._meta ? init._meta.workingDirectory : undefined,
    info: (init && init.agentInfo) || {},
  };
  const images = agent.capabilities.promptCapabilities && agent.capabilities.promptCapabilities.image === true;
  ui.attach.hidden = !images;
  performance.mark("oa-initialized");
  await attach(connection);
  setReady(true);
}

/** Attaches to the current session (resume without loss) or starts one. */
async function attach(connection) {
  if (current) {
    try {
      const result = await connection.call("_oa/session/resume", { sessionId: current.id, lastSeq: current.lastSeq });
      setRunning(result && result.promptRunning === true);
      if (result && result.finishedWhileAway && result.finishedWhileAway !== "end_turn") {
        ui.transcript.system("The answer ended while this phone was away (" + result.finishedWhileAway + ").");
      }
      showPickers();
      return;
    } catch (error) {
      if (!(error instanceof RPCError) || error.code !== -32002) throw error;
      if (error.data && typeof error.data.oldestSeq === "number") {
        ui.transcript.system("Some output from while this phone was away is no longer held by the desktop.");
        current.lastSeq = typeof error.data.lastSeq === "number" ? error.data.lastSeq : current.lastSeq;
        persist();
        showPickers();
        return;
      }
      if (agent.capabilities.loadSession === true) {
        try {
          await loadSession(connection, current.id);
          return;
        } catch (loadError) {
          if (loadError instanceof ConnectionLost) throw loadError;
        }
      }
      ui.transcript.system("That session has ended (the desktop's bridge restarted or the agent stopped).");
      forgetCurrent();
    }
  }
  await newSession(connection);
}

async function newSession(connection) {
  const params = { mcpServers: [] };
  if (agent.workingDirectory) params.cwd = agent.workingDirectory;
  const result = await connection.call("session/new", params);
  current = { id: str(result.sessionId), lastSeq: 0, modes: result.modes || null, models: result.models || null, commands: [], log: [], updated: Date.now() };
  localStorage.setItem(SESSION_KEY, current.id);
  ui.transcript.clear();
  ui.permissions.replaceChildren();
  setRunning(false);
  persist();
  showPickers();
}

async function loadSession(connection, id) {
  const previous = current && current.id === id ? current : null;
  current = { id, lastSeq: 0, modes: null, models: null, commands: [], log: [], updated: Date.now(), loading: true };
  ui.transcript.clear();
  const params = { sessionId: id, mcpServers: [] };
  if (agent.workingDirectory) params.cwd = agent.workingDirectory;
  try {
    const result = await connection.call("session/load", params);
    current.modes = (result && result.modes) || (previous && previous.modes) || null;
    current.models = (result && result.models) || null;
  } finally {
    current.loading = false;
  }
  localStorage.setItem(SESSION_KEY, id);
  persist();
  showPickers();
}

// MARK: - What the bridge sends

function onNotification(message) {
  const params = message.params || {};
  switch (message.method) {
    case "session/update": {
      if (!current || params.sessionId !== current.id) return;
      const seq = params._meta && typeof params._meta.seq === "number" ? params._meta.seq : null;
      if (seq !== null && seq <= current.lastSeq) return; // already shown: replay overlap
      applyUpdate(params.update || {});
      current.log.push({ seq, update: params.update || {} });
      if (seq !== null) current.lastSeq = seq;
      persistSoon();
      return;
    }
    case "_oa/user_message": {
      // What another phone (or tab) of this session sent: shown, and kept with the conversation (not replayed).
      if (!current || params.sessionId !== current.id || !params.update) return;
      applyUpdate(params.update);
      current.log.push({ seq: null, update: params.update });
      persistSoon();
      return;
    }
    case "_oa/request_answered":
      removePermission(params.requestId);
      return;
    case "_oa/prompt_finished":
      if (current && params.sessionId === current.id) setRunning(false);
      return;
    case "_oa/agent_exited":
      ui.transcript.system("The agent stopped. A new session starts when you send a message.");
      ui.permissions.replaceChildren();
      setRunning(false);
      forgetCurrent();
      return;
    default:
      return;
  }
}

function applyUpdate(update) {
  switch (update.sessionUpdate) {
    case "available_commands_update":
      current.commands = Array.isArray(update.availableCommands) ? update.availableCommands : [];
      return;
    case "current_mode_update":
      if (current.modes) current.modes.currentModeId = update.currentModeId;
      showPickers();
      return;
    default:
      ui.transcript.apply(update);
  }
}

function onRequest(message) {
  if (message.method === "session/request_permission") {
    showPermission(message);
    return;
  }
  conn.send({ jsonrpc: "2.0", id: message.id, error: { code: -32601, message: "the web app does not handle " + String(message.method).slice(0, 100) } });
}

function permissionKey(id) {
  return JSON.stringify(id);
}

function showPermission(message) {
  const params = message.params || {};
  if (current && params.sessionId !== current.id) return;
  const key = permissionKey(message.id);
  for (const card of ui.permissions.children) if (card.dataset.requestId === key) card.remove();
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
    button.textContent = str(option.name) || str(option.optionId);
    button.dataset.kind = str(option.kind);
    button.addEventListener("click", () => {
      const sent = conn && conn.respond(message.id, { outcome: { outcome: "selected", optionId: option.optionId } });
      if (sent) card.remove();
    });
    options.append(button);
  }
  card.append(question, options);
  ui.permissions.append(card);
}

function removePermission(id) {
  const key = permissionKey(id);
  for (const card of [...ui.permissions.children]) if (card.dataset.requestId === key) card.remove();
}

// MARK: - Sessions, storage

function restoreCurrent() {
  const id = localStorage.getItem(SESSION_KEY);
  current = id ? readSession(id) : null;
  ui.transcript.clear();
  if (!current) return;
  replayLog();
}

function readSession(id) {
  try {
    const value = JSON.parse(localStorage.getItem(sessionKey(id)) || "null");
    if (value && value.id === id) {
      value.log = Array.isArray(value.log) ? value.log : [];
      value.lastSeq = Number(value.lastSeq) || 0;
      return value;
    }
  } catch {
    // unreadable: start afresh
  }
  return null;
}

function replayLog() {
  ui.transcript.clear();
  for (const entry of current.log) {
    if (entry.user) ui.transcript.user(entry.user);
    else if (entry.update) applyUpdate(entry.update);
  }
  ui.transcript.flush();
  const transcript = $("transcript");
  transcript.scrollTop = transcript.scrollHeight;
}

function forgetCurrent() {
  if (current) localStorage.removeItem(sessionKey(current.id));
  localStorage.removeItem(SESSION_KEY);
  current = null;
}

function persistSoon() {
  if (!saveTimer) saveTimer = setTimeout(persist, 250);
}

function persist() {
  clearTimeout(saveTimer);
  saveTimer = 0;
  if (!current || current.loading) return;
  current.updated = Date.now();
  let text = JSON.stringify(current);
  // Keep the newest part of a long conversation; the oldest entries go first.
  while (text.length > MAX_LOG_CHARS && current.log.length > 1) {
    current.log.splice(0, Math.ceil(current.log.length / 4));
    text = JSON.stringify(current);
  }
  try {
    localStorage.setItem(sessionKey(current.id), text);
  } catch {
    // Storage full: keep what fits (the bridge's replay still has the rest while the session lives).
    try {
      current.log = current.log.slice(-50);
      localStorage.setItem(sessionKey(current.id), JSON.stringify(current));
    } catch {
      // give up persisting this time
    }
  }
}

addEventListener("pagehide", persist);

function showPickers() {
  fillPicker($("mode-picker"), $("mode-select"), current && current.modes, "availableModes", "id", "currentModeId");
  fillPicker($("model-picker"), $("model-select"), current && current.models, "availableModels", "modelId", "currentModelId");
}

function fillPicker(label, select, source, listKey, idKey, currentKey) {
  const list = source && Array.isArray(source[listKey]) ? source[listKey] : [];
  label.hidden = list.length < 2;
  select.replaceChildren();
  for (const item of list) {
    if (!item || typeof item !== "object") continue;
    const option = document.createElement("option");
    option.value = str(item[idKey]);
    option.textContent = str(item.name) || str(item[idKey]);
    select.append(option);
  }
  select.value = str(source && source[currentKey]);
}

$("mode-select").addEventListener("change", async (event) => {
  if (!current || !conn) return;
  const modeId = event.target.value;
  try {
    await conn.call("session/set_mode", { sessionId: current.id, modeId });
    if (current.modes) current.modes.currentModeId = modeId;
    persistSoon();
  } catch (error) {
    ui.transcript.system("The mode was not changed: " + String(error.message).slice(0, 200));
    showPickers();
  }
});

$("model-select").addEventListener("change", async (event) => {
  if (!current || !conn) return;
  const modelId = event.target.value;
  try {
    await conn.call("session/set_model", { sessionId: current.id, modelId });
    if (current.models) current.models.currentModelId = modelId;
    persistSoon();
  } catch (error) {
    ui.transcript.system("The model was not changed: " + String(error.message).slice(0, 200));
    showPickers();
  }
});

async function openSessions() {
  const dialog = $("sessions");
  const list = $("session-list");
  const known = new Map();
  for (let i = 0; i < localStorage.length; i++) {
    const key = localStorage.key(i);
    if (!key || !key.startsWith("oa-bridge.s.")) continue;
    const session = readSession(key.slice("oa-bridge.s.".length));
    if (session) known.set(session.id, { id: session.id, title: firstUserText(session), updated: session.updated });
  }
  if (conn && conn.ready && agent.capabilities.sessionCapabilities && agent.capabilities.sessionCapabilities.list !== undefined) {
    try {
      const result = await conn.call("session/list", agent.workingDirectory ? { cwd: agent.workingDirectory } : {});
      for (const item of (result && Array.isArray(result.sessions) ? result.sessions : []).slice(0, 100)) {
        const id = str(item && item.sessionId);
        if (id && !known.has(id)) known.set(id, { id, title: str(item.title), updated: Date.parse(item.updatedAt) || 0 });
      }
    } catch {
      // the agent does not list sessions after all
    }
  }
  list.replaceChildren();
  for (const item of [...known.values()].sort((a, b) => (b.updated || 0) - (a.updated || 0))) {
    const li = document.createElement("li");
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = (current && item.id === current.id ? "● " : "") + (item.title || item.id);
    if (item.updated) button.append(Object.assign(document.createElement("span"), { className: "when", textContent: new Date(item.updated).toLocaleString() }));
    button.addEventListener("click", () => { dialog.close(); switchTo(item.id); });
    li.append(button);
    list.append(li);
  }
  dialog.showModal();
}

function firstUserText(session) {
  for (const entry of session.log) {
    if (entry.user) {
      const text = entry.user.map((b) => (b && b.type === "text" ? str(b.text) : "")).join(" ").trim();
      if (text) return text.slice(0, 60);
    }
  }
  return "";
}

async function switchTo(id) {
  if (!conn || !conn.ready || (current && current.id === id)) return;
  persist();
  localStorage.setItem(SESSION_KEY, id);
  current = readSession(id) || { id, lastSeq: 0, modes: null, models: null, commands: [], log: [], updated: Date.now() };
  ui.permissions.replaceChildren();
  replayLog();
  setRunning(false);
  try {
    await attach(conn);
  } catch (error) {
    ui.transcript.system("Could not open that session: " + String(error.message).slice(0, 200));
  }
}

$("sessions-button").addEventListener("click", openSessions);
$("close-sessions").addEventListener("click", () => $("sessions").close());
$("new-session").addEventListener("click", async () => {
  $("sessions").close();
  if (!conn || !conn.ready) return;
  persist();
  try {
    await newSession(conn);
  } catch (error) {
    ui.transcript.system("Could not start a session: " + String(error.message).slice(0, 200));
  }
});
$("error-retry").addEventListener("click", () => location.reload());

// MARK: - Composer

$("composer").addEventListener("submit", (event) => {
  event.preventDefault();
  sendPrompt();
});

ui.message.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing && matchMedia("(pointer: fine)").matches) {
    event.preventDefault();
    sendPrompt();
  }
});

ui.message.addEventListener("input", () => {
  ui.message.style.height = "auto";
  ui.message.style.height = Math.min(ui.message.scrollHeight, 160) + "px";
  suggestCommands();
});

ui.stop.addEventListener("click", () => {
  if (!current || !conn) return;
  try {
    conn.notify("session/cancel", { sessionId: current.id });
  } catch {
    // offline: the prompt goes on; try again once connected
    return;
  }
  ui.permissions.replaceChildren();
});

async function sendPrompt() {
  if (!ready || running || !conn) return;
  const text = ui.message.value.trim();
  if (!text && attachments.length === 0) return;
  const prompt = attachments.map((a) => ({ type: "image", mimeType: a.mimeType, data: a.data }));
  if (text) prompt.push({ type: "text", text });
  if (!current) {
    try {
      await newSession(conn);
    } catch (error) {
      ui.transcript.system("Could not start a session: " + String(error.message).slice(0, 200));
      return;
    }
  }
  ui.transcript.user(prompt);
  // Stored without the photo's bytes (they would fill the storage); the transcript keeps a marker.
  current.log.push({ user: prompt.map((b) => (b.type === "image" ? { type: "text", text: "[photo]\n" } : b)) });
  persist();
  ui.message.value = "";
  ui.message.style.height = "auto";
  clearAttachments();
  ui.commands.hidden = true;
  setRunning(true);
  const session = current.id;
  try {
    const result = await conn.call("session/prompt", { sessionId: session, prompt });
    if (current && current.id === session) {
      setRunning(false);
      const reason = result && result.stopReason;
      if (reason === "cancelled") ui.transcript.system("Stopped.");
      else if (reason && reason !== "end_turn") ui.transcript.system("The agent stopped: " + String(reason).slice(0, 100) + ".");
    }
  } catch (error) {
    if (error instanceof ConnectionLost) return; // the prompt goes on; resume says when it ends
    if (current && current.id === session) {
      setRunning(false);
      ui.transcript.system("The agent answered with an error: " + String(error.message).slice(0, 300));
    }
  }
}

function suggestCommands() {
  const value = ui.message.value;
  const commands = current && Array.isArray(current.commands) ? current.commands : [];
  const match = /^\/(\S*)$/.exec(value);
  if (!match || commands.length === 0) {
    ui.commands.hidden = true;
    return;
  }
  const prefix = match[1].toLowerCase();
  const found = commands.filter((c) => c && typeof c.name === "string" && c.name.toLowerCase().startsWith(prefix)).slice(0, 8);
  ui.commands.replaceChildren();
  for (const command of found) {
    const li = document.createElement("li");
    const button = document.createElement("button");
    button.type = "button";
    button.append("/" + command.name);
    if (command.description) {
      const desc = document.createElement("span");
      desc.className = "desc";
      desc.textContent = str(command.description);
      button.append(desc);
    }
    button.addEventListener("click", () => {
      ui.message.value = "/" + command.name + " ";
      ui.commands.hidden = true;
      ui.message.focus();
    });
    li.append(button);
    ui.commands.append(li);
  }
  ui.commands.hidden = found.length === 0;
}

// MARK: - Photos

ui.attach.addEventListener("click", () => ui.photo.click());
ui.photo.addEventListener("change", async () => {
  const file = ui.photo.files && ui.photo.files[0];
  ui.photo.value = "";
  if (!file) return;
  try {
    attachments.push(await shrink(file));
    showAttachments();
  } catch {
    ui.transcript.system("That photo could not be read.");
  }
});

/** The photo as JPEG, at most 1280 px on its longer side and well under the bridge's frame limit. */
async function shrink(file) {
  const bitmap = await createImageBitmap(file);
  let scale = Math.min(1, 1280 / Math.max(bitmap.width, bitmap.height));
  for (let quality = 0.82; ; quality -= 0.15) {
    const canvas = document.createElement("canvas");
    canvas.width = Math.max(1, Math.round(bitmap.width * scale));
    canvas.height = Math.max(1, Math.round(bitmap.height * scale));
    canvas.getContext("2d").drawImage(bitmap, 0, 0, canvas.width, canvas.height);
    const blob = await new Promise((resolve) => canvas.toBlob(resolve, "image/jpeg", Math.max(0.4, quality)));
    if (!blob) throw new Error("encode failed");
    if (blob.size < 600_000 || quality < 0.4) {
      const data = await new Promise((resolve, reject) => {
        const reader = new FileReader();
        reader.onload = () => resolve(String(reader.result).replace(/^data:[^,]*,/, ""));
        reader.onerror = () => reject(reader.error);
        reader.readAsDataURL(blob);
      });
      return { mimeType: "image/jpeg", data, url: URL.createObjectURL(blob) };
    }
    scale *= 0.75;
  }
}

function showAttachments() {
  ui.attachments.replaceChildren();
  for (const [index, item] of attachments.entries()) {
    const button = document.createElement("button");
    button.type = "button";
    button.setAttribute("aria-label", "Remove photo " + (index + 1));
    const img = document.createElement("img");
    img.src = item.url;
    img.alt = "";
    button.append(img);
    button.addEventListener("click", () => {
      URL.revokeObjectURL(item.url);
      attachments.splice(index, 1);
      showAttachments();
    });
    ui.attachments.append(button);
  }
  ui.attachments.hidden = attachments.length === 0;
}

function clearAttachments() {
  for (const item of attachments) URL.revokeObjectURL(item.url);
  attachments = [];
  showAttachments();
}

document.addEventListener("visibilitychange", () => {
  if (document.visibilityState !== "visible") return;
  const state = auth.load();
  if (state && state.tokens && state.tokens.accessExp - Date.now() < auth.REFRESH_MARGIN_MS) refreshNow();
});

boot().catch((error) => fail("The app could not start: " + String(error && error.message).slice(0, 200)));
