// oa-bridge's phone web app: pairs from the QR code's URL fragment, then drives the agent over the bridge's
// WebSocket (ACP v1, camelCase). Everything the agent sends is untrusted text (see view.js and markdown.js).

import * as auth from "./auth.js";
import * as pairing from "./pairing.js";
import { Outbox } from "./outbox.js";
import { readOnlyReason, showReadOnly } from "./restored.js";
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

const outbox = new Outbox(ui.transcript, {
  connection: () => conn,
  ready: () => ready,
  running: () => running,
  setRunning: (value) => setRunning(value),
  session: () => current,
  newSession: (connection) => newSession(connection),
  persist: () => persist(),
});

let conn = null;
let agent = { capabilities: {}, workingDirectory: undefined, info: {} };
let current = null; // {id, lastSeq, modes, models, commands, log, updated}
let running = false;
let ready = false;
let refused = null; // an access token the bridge refused (4001): refresh it before the next connection
let attachments = []; // [{mimeType, data, url}]
let refreshTimer = 0;
let saveTimer = 0;
let resumed = null; // what the last _oa/session/resume said: {session, promptRunning, finishedWhileAway}

// MARK: - Screens and state

function show(name) {
  for (const screen of document.querySelectorAll(".screen")) screen.hidden = screen.id !== "screen-" + name;
  $("sessions-button").hidden = name !== "chat";
  // A dialog (Sessions) belongs to the chat: it never stays open over another screen.
  if (name !== "chat") for (const dialog of document.querySelectorAll("dialog[open]")) dialog.close();
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
  // Which transport carries the link (rpc.js falls back to Streamable HTTP at /acp when the WebSocket does not open).
  const transport = conn ? conn.transport : "websocket";
  node.dataset.transport = transport;
  node.title = transport === "http" ? "Over HTTP (Streamable HTTP at /acp): the WebSocket did not open" : "Over WebSocket";
  if (transport === "http" && name === "connected") text += " over HTTP";
  node.textContent = text;
  if (name !== "connected") setReady(false);
}

function setReady(value) {
  ready = value;
  // While the link is down the composer stays open: a message is kept and sent once the link is back.
  ui.message.disabled = !value && !conn;
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
  // A turn that ended (answered, resumed as finished, stopped): the next waiting prompt may go.
  if (!value && outbox.length) setTimeout(() => outbox.flush(), 0);
}

function updateButtons() {
  ui.send.disabled = (!ready && !conn) || running;
  ui.stop.hidden = !running;
  ui.send.hidden = running;
}

function fail(message) {
  $("error-text").textContent = message;
  setConnection("failed");
  show("error");
}

const UNPAIRED_REASONS = {
  revoked: "The desktop revoked this phone's access, or its sign-in expired. Nothing from the desktop is kept here any more.",
  user: "You unpaired this phone: the desktop no longer lets it in, and nothing from the desktop is kept here any more.",
  local: "This phone forgot its pairing and every conversation. The desktop could not be reached to revoke it: it may still list this phone (remove it there with oa-bridge devices revoke).",
  needsPairing: "This desktop lets in paired phones only, and this phone is not paired with it.",
  rebind: "This desktop now lets in only phones whose sign-in is bound to a key kept on the phone (DPoP), and this phone's is not (paired before, or its key is gone). Scan the QR code on the desktop to pair it again.",
};

/** Why the bridge no longer takes this phone's tokens, as an UNPAIRED_REASONS key. */
function unpairedReason(error) {
  return error && error.code === "invalid_dpop_proof" ? "rebind" : "revoked";
}

/** Forgets every stored secret and conversation, stops the connection and shows the unpaired screen. */
function unpaired(reason = "revoked") {
  if (conn) conn.stop();
  conn = null;
  clearTimeout(refreshTimer);
  clearTimeout(saveTimer);
  saveTimer = 0;
  auth.forget();
  current = null;
  outbox.clear();
  ui.transcript.clear();
  ui.permissions.replaceChildren();
  ui.message.value = "";
  clearAttachments();
  setRunning(false);
  $("unpaired-reason").textContent = UNPAIRED_REASONS[reason] || UNPAIRED_REASONS.revoked;
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
  if (payload) return openLink(payload, state);
  if (state && (state.tokens || state.noAuth)) return startChat();
  if (state && state.pending) return pair(state.pending.token, state.name, state.wsPath, state.pending.deviceId);
  if (location.hash) {
    removeFragment();
    return fail("This link is damaged: it does not hold a pairing code. Scan the QR code on the desktop again.");
  }
  setConnection("failed");
  show("nopair");
}

/** A pairing link, at start or opened in this tab later (hashchange): pairs, asks first, or is ignored (pairing.js). */
async function openLink(payload, state) {
  // Typed as http:// on a bridge that speaks TLS: go to https:// before the token travels (the bridge refuses it
  // in clear from the LAN anyway). The fragment stays in the browser.
  const loopback = /^(127\.|\[::1\]$|localhost$)/.test(location.hostname);
  if (location.protocol === "http:" && !loopback && /^https:/.test(str(payload.http))) {
    location.replace("https://" + location.host + location.pathname + location.hash);
    return undefined;
  }
  const wsPath = wsPathOf(payload);
  const decision = pairing.decide(payload, state);
  if (decision !== "pair") removeFragment(); // pair() keeps it until the desktop answered (a reload retries)
  switch (decision) {
    case "noauth":
      auth.save({ noAuth: true, name: str(payload.name), wsPath });
      return startChat();
    case "pair":
      stopChat();
      return pair(payload.token, str(payload.name), wsPath, null);
    case "confirm":
      return confirmReplace(payload, state, wsPath);
    default:
      // A link without a pairing code: what is stored stays as it is (a phone waiting for approval goes on waiting).
      if (conn) return undefined;
      if (state && state.pending && !state.tokens) return pair(state.pending.token, state.name, state.wsPath, state.pending.deviceId);
      return startChat();
  }
}

/** Asks, in the page, whether a new pairing code replaces this phone's pairing; keeps it unless the user says so. */
function confirmReplace(payload, state, wsPath) {
  const stored = str(state && state.name) || "this desktop";
  const name = str(payload.name) || "a desktop";
  $("confirm-text").textContent = "This phone is already paired with " + stored + ". The link you opened pairs it with "
    + name + " instead, and replaces the current pairing.";
  const wasChat = !$("screen-chat").hidden;
  show("confirm");
  return new Promise((resolve) => {
    const replace = $("confirm-replace");
    const keep = $("confirm-keep");
    const done = (yes) => {
      replace.onclick = null;
      keep.onclick = null;
      if (yes) {
        stopChat();
        resolve(pair(payload.token, str(payload.name), wsPath, null, state));
      } else {
        if (wasChat || conn) show("chat");
        resolve(conn ? undefined : startChat());
      }
    };
    replace.onclick = () => done(true);
    keep.onclick = () => done(false);
  });
}

/** Stops the connection and the token refresh (before pairing anew). */
function stopChat() {
  if (conn) conn.stop();
  conn = null;
  clearTimeout(refreshTimer);
  persist();
}

addEventListener("hashchange", () => {
  // A new pairing link opened in this tab: pair (asking first when paired). Only the app's own pages have links here.
  const payload = auth.payloadFromFragment(location.hash);
  if (!payload) return;
  openLink(payload, auth.load()).catch((error) => fail("The app could not pair: " + String(error && error.message).slice(0, 200)));
});

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

/** Pairs with `pairingToken`. `previous`: the pairing this replaces (the user agreed); kept if the new code fails. */
async function pair(pairingToken, bridgeName, wsPath, deviceId, previous = null) {
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
        // A refused code never costs the pairing the phone had (the link may be stale, or someone else's).
        if (previous && previous.tokens) auth.save(previous);
        else auth.forget();
        removeFragment();
        if (error.code === "pairing_token_used" || error.code === "token_expired" || error.code === "token_revoked") {
          return fail("This pairing code was already used or has expired. Show a new one on the desktop (oa-bridge pair --new) and scan it again.");
        }
        if (error.code === "device_revoked" && !(previous && previous.tokens)) return unpaired();
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
      if (previous && previous.tokens) {
        // The pairing this one replaces is of no use any more: the desktop revokes it (best effort), and its
        // conversations are forgotten with it.
        auth.apiFetch("/api/logout", { method: "POST", cache: "no-store", credentials: "omit" }, previous.tokens).catch(() => {});
        auth.forget({ keepKey: true }); // the new tokens are bound to this origin's key too
        current = null;
      }
      // A short link does not name the bridge: the exchange's answer does (issue 29 item 2).
      const named = bridgeName || (result.bridge && typeof result.bridge.name === "string" ? result.bridge.name.slice(0, 200) : "");
      if (named) $("bridge-name").textContent = named;
      auth.save({ tokens: result.tokens, name: named, wsPath });
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
    if (error instanceof auth.AuthError && error.unpaired) return unpaired(unpairedReason(error));
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
  if (state && state.noAuth) return diagnoseWithoutAuth();
  if (!state || !state.tokens) return;
  let response;
  try {
    response = await auth.apiFetch("/api/me", { cache: "no-store" }, state.tokens);
  } catch {
    return; // the network: the connection retries
  }
  if (response.status !== 401 && response.status !== 403) return;
  try {
    await auth.fresh(state.tokens.access);
  } catch (error) {
    if (error instanceof auth.AuthError && error.unpaired) unpaired(unpairedReason(error));
  }
}

/** Without tokens (a link from a bridge without auth): when the bridge wants tokens after all (it answers 401), the
 * phone needs pairing; reconnecting would never succeed. */
async function diagnoseWithoutAuth() {
  let response;
  try {
    response = await fetch("/api/status", { cache: "no-store", credentials: "omit" });
  } catch {
    return; // the network: the connection retries
  }
  if (response.status === 401 || response.status === 403) unpaired("needsPairing");
}

// MARK: - The connection

function startChat() {
  const state = auth.load() || {};
  if (state.name) $("bridge-name").textContent = state.name;
  show("chat");
  restoreCurrent();
  outbox.restore();
  conn = new Connection(state.wsPath || "/", {
    token: accessToken,
    upgradeProof: auth.upgradeProof,
    fetcher: auth.httpFetcher,
    opened: onOpened,
    request: onRequest,
    notification: onNotification,
    state: setConnection,
    closed: (code, reason, wasOpen) => {
      if (code === 4003) {
        unpaired(unpairing ? "user" : "revoked");
        return "stop";
      }
      if (reason instanceof auth.AuthError) {
        if (reason.unpaired) {
          unpaired(unpairedReason(reason));
          return "stop";
        }
        return undefined;
      }
      if (code === 4001) {
        refused = (auth.load() || {}).tokens?.access || null;
        return "now";
      }
      if (!wasOpen) {
        auth.nonceStale();
        diagnose();
      }
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
  outbox.settle(resumed);
  outbox.flush();
}

/** Attaches to the current session (resume without loss) or starts one. */
async function attach(connection) {
  if (current) {
    try {
      const result = await connection.call("_oa/session/resume", { sessionId: current.id, lastSeq: current.lastSeq });
      resumed = { session: current.id, promptRunning: result && result.promptRunning === true, finishedWhileAway: !!(result && result.finishedWhileAway) };
      setRunning(result && result.promptRunning === true);
      if (result && result.finishedWhileAway && result.finishedWhileAway !== "end_turn") {
        ui.transcript.system("The answer ended while this phone was away (" + result.finishedWhileAway + ").");
      }
      // Issue 25 (F7): the desktop's bridge stopped before it stored its newest output; what this phone missed of it is gone.
      if (result && result.lostUpdates) ui.transcript.system("Some output may be missing here: the desktop's bridge stopped unexpectedly before it saved it.");
      if (readOnlyReason(result)) showReadOnly(ui.transcript, current.id, startOver);
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
    // Issue 25 (F7): the replay lacks what the desktop's bridge lost when it stopped unexpectedly.
    if (result && result._meta && result._meta.lostUpdates) ui.transcript.system("Some output may be missing here: the desktop's bridge stopped unexpectedly before it saved it.");
  } finally {
    current.loading = false;
  }
  localStorage.setItem(SESSION_KEY, id);
  persist();
  showPickers();
}

// MARK: - What the bridge sends
//
// The agent's words reach this page only as `session/update` (and its requests): the bridge drops any `_oa/*` the
// agent sends (Protocol.md), and the page still acts on the bridge's own notifications only in ways an agent could not
// turn against the user: `_oa/agent_exited` is checked with the bridge before the session is given up, and
// `_oa/prompt_finished` does not end a turn this page is still waiting on.

function onNotification(message) {
  const params = message.params || {};
  switch (message.method) {
    case "session/update": {
      if (!current || params.sessionId !== current.id) return;
      const seq = params._meta && typeof params._meta.seq === "number" ? params._meta.seq : null;
      if (seq !== null && seq <= current.lastSeq) return; // already shown: replay overlap
      const update = params.update || {};
      const bridge = recordedByBridge(params);
      if (seq !== null) current.lastSeq = seq;
      // The bridge's record of a prompt this page sent: shown and kept already (as sent), not a second time.
      if (!(bridge && ownPrompt(params._meta.oa.promptId))) {
        applyUpdate(update, bridge);
        current.log.push(bridge ? { seq, update, bridge } : { seq, update });
      }
      persistSoon();
      return;
    }
    case "_oa/user_message": {
      // What another phone (or tab) of this session sent, told by the bridge: shown as a user's words, and kept with
      // the conversation.
      if (!current || params.sessionId !== current.id || !params.update) return;
      applyUpdate(params.update, true);
      current.log.push({ seq: null, update: params.update, bridge: true });
      persistSoon();
      return;
    }
    case "_oa/request_answered":
      removePermission(params.requestId);
      return;
    case "_oa/prompt_finished":
      // Sent when the client that prompted is gone: never about the prompt this page still waits an answer for.
      if (current && params.sessionId === current.id && outbox.prompting !== current.id) setRunning(false);
      return;
    case "_oa/agent_exited":
      checkAgentExited();
      return;
    default:
      return;
  }
}

/** Whether a `session/update` is the bridge's record of a prompt (`_meta.oa.origin` "bridge", beside `seq`). */
function recordedByBridge(params) {
  const oa = params._meta && params._meta.oa;
  return !!(oa && typeof oa === "object" && oa.origin === "bridge");
}

/** Whether `promptId` (a record's `_meta.oa.promptId`: the id of the `session/prompt` request) is one of this
 * phone's prompts of the current session: each gets an id unique to it (newPromptId), kept in its log entry. */
function ownPrompt(promptId) {
  if (typeof promptId !== "string" || !promptId.startsWith("prompt-")) return false;
  const log = current ? current.log : [];
  for (let i = log.length - 1, n = 0; i >= 0 && n < 500; i--, n++) if (log[i].promptId === promptId) return true;
  return outbox.owns(promptId);
}

/** `_oa/agent_exited`: the bridge forgets the sessions of an agent that died, so asking it about the current session
 * tells a real exit (unknown session) from a forged notice (the session lives on: nothing changes). */
async function checkAgentExited() {
  if (!current || !conn || !conn.ready) return;
  const session = current.id;
  try {
    const result = await conn.call("_oa/session/resume", { sessionId: session, lastSeq: current.lastSeq });
    // The bridge keeps the session for the next agent: it goes on, or (an agent that cannot load it) stays readable.
    if (readOnlyReason(result) && current && current.id === session) showReadOnly(ui.transcript, session, startOver);
    return; // the session lives: not the bridge's notice
  } catch (error) {
    if (!(error instanceof RPCError) || !current || current.id !== session) return;
    if (error.code !== -32002 && error.code !== -32006) return;
    if (error.data && typeof error.data.oldestSeq === "number") return; // a gap: the session lives
  }
  ui.transcript.system("The agent stopped. A new session starts when you send a message.");
  ui.permissions.replaceChildren();
  setRunning(false);
  // The conversation stays readable under Sessions; this page starts a new session with the next message.
  persist();
  localStorage.removeItem(SESSION_KEY);
  current = null;
}

function applyUpdate(update, fromBridge = false) {
  switch (update.sessionUpdate) {
    case "available_commands_update":
      current.commands = Array.isArray(update.availableCommands) ? update.availableCommands : [];
      return;
    case "current_mode_update":
      if (current.modes) current.modes.currentModeId = update.currentModeId;
      showPickers();
      return;
    default:
      ui.transcript.apply(update, fromBridge);
  }
}

function onRequest(message) {
  if (message.method === "session/request_permission") {
    showPermission(message);
    return;
  }
  conn.send({ jsonrpc: "2.0", id: message.id, error: { code: -32601, message: "the web app does not handle " + String(message.method).slice(0, 100) } });
}

/** The label of each permission option kind (ACP's PermissionOptionKind). */
const KIND_LABELS = { allow_once: "Allow once", allow_always: "Always allow", reject_once: "Reject", reject_always: "Always reject" };

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
    // What the button does is its kind, whatever the agent named it: the name is secondary text only.
    const name = str(option.name) || str(option.optionId);
    const kind = KIND_LABELS[str(option.kind)];
    button.append(Object.assign(document.createElement("span"), { className: "kind", textContent: kind || name }));
    if (kind && name.trim().toLowerCase() !== kind.toLowerCase()) {
      button.append(Object.assign(document.createElement("span"), { className: "name", textContent: "“" + name + "”" }));
    }
    button.dataset.kind = kind ? str(option.kind) : "";
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
    try {
      if (entry.user) showUserEntry(entry);
      else if (entry.update) applyUpdate(entry.update, entry.bridge === true);
    } catch (error) {
      // One entry the page cannot show never keeps the rest (or the app) from opening.
      console.warn("oa-bridge: a stored entry was skipped:", error && error.message);
    }
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
/** The "New session" button of a read-only session (restored.js): as the Sessions dialog's. */
async function startOver() {
  if (!conn || !conn.ready) return;
  persist();
  try {
    await newSession(conn);
  } catch (error) {
    ui.transcript.system("Could not start a session: " + String(error.message).slice(0, 200));
  }
}

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

// MARK: - Unpair

let unpairing = false;

$("unpair").addEventListener("click", () => {
  $("unpair-confirm").hidden = false;
  $("unpair").hidden = true;
  $("unpair-no").focus();
});
$("unpair-no").addEventListener("click", resetUnpair);
$("sessions").addEventListener("close", resetUnpair);
$("unpair-yes").addEventListener("click", unpairNow);

function resetUnpair() {
  $("unpair-confirm").hidden = true;
  $("unpair").hidden = false;
}

/** The user unpairs this phone: the desktop revokes it (`_oa/logout` on the live connection, else
 * `POST /api/logout`), then the phone forgets every stored secret and conversation, reached or not. */
async function unpairNow() {
  $("sessions").close();
  unpairing = true;
  const state = auth.load();
  let reached = !(state && state.tokens); // nothing to revoke without tokens
  if (!reached && conn && conn.ready) {
    try {
      await Promise.race([conn.call("_oa/logout", {}), sleep(5_000).then(() => { throw new Error("timeout"); })]);
      reached = true;
    } catch (error) {
      reached = error instanceof RPCError; // the bridge answered (auth off: -32005): nothing left to revoke there
    }
  }
  if (!reached) {
    try {
      const tokens = await auth.fresh();
      const response = await auth.apiFetch("/api/logout", { method: "POST", cache: "no-store", credentials: "omit" }, tokens);
      reached = response.ok || response.status === 401 || response.status === 403;
    } catch (error) {
      reached = error instanceof auth.AuthError && error.unpaired; // already revoked
    }
  }
  unpaired(reached ? "user" : "local");
  unpairing = false;
}

// MARK: - Following the conversation

const newMessages = $("new-messages");
ui.transcript.onUnseen = () => { newMessages.hidden = false; };
ui.transcript.onFollow = () => { newMessages.hidden = true; };
$("transcript").addEventListener("scroll", () => {
  if (!newMessages.hidden && ui.transcript.atBottom()) newMessages.hidden = true;
}, { passive: true });
newMessages.addEventListener("click", () => ui.transcript.toBottom());

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

// MARK: - Sending prompts (outbox.js: nothing typed is lost)

async function sendPrompt() {
  if (running || !conn) return;
  const text = ui.message.value.trim();
  if (!text && attachments.length === 0) return;
  const prompt = attachments.map((a) => ({ type: "image", mimeType: a.mimeType, data: a.data }));
  if (text) prompt.push({ type: "text", text });
  ui.message.value = "";
  ui.message.style.height = "auto";
  clearAttachments();
  ui.commands.hidden = true;
  outbox.submit(prompt);
}

/** A user message from the stored conversation. */
function showUserEntry(entry) {
  ui.transcript.user(entry.user);
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
