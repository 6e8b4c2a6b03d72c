// The app's screens and the connection's status line: which screen shows, the state of the link and of the turn
// (the buttons follow them), the error and unpaired screens.

import * as auth from "./auth.js";
import { clearAttachments } from "./composer.js";
import { $ } from "./dom.js";

const STATES = {
  idle: "Starting…", connecting: "Connecting…", connected: "Connected", reconnecting: "Reconnecting…",
  offline: "Offline", stopped: "Disconnected", pairing: "Pairing…", waiting: "Waiting for approval", unpaired: "Unpaired",
  failed: "Not connected",
};

export function show(name) {
  for (const screen of document.querySelectorAll(".screen")) screen.hidden = screen.id !== "screen-" + name;
  $("sessions-button").hidden = name !== "chat";
  // A dialog (Sessions) belongs to the chat: it never stays open over another screen.
  if (name !== "chat") for (const dialog of document.querySelectorAll("dialog[open]")) dialog.close();
}

export function setConnection(app, name, detail) {
  const node = $("connection");
  node.dataset.state = name;
  let text = STATES[name] || name;
  if (name === "reconnecting" && typeof detail === "number" && detail >= 1000) text = "Reconnecting in " + Math.round(detail / 1000) + " s";
  // Which transport carries the link (rpc.js falls back to Streamable HTTP at /acp when the WebSocket does not open).
  const transport = app.conn ? app.conn.transport : "websocket";
  node.dataset.transport = transport;
  node.title = transport === "http" ? "Over HTTP (Streamable HTTP at /acp): the WebSocket did not open" : "Over WebSocket";
  if (transport === "http" && name === "connected") text += " over HTTP";
  node.textContent = text;
  if (name !== "connected") setReady(app, false);
}

export function setReady(app, value) {
  app.ready = value;
  // While the link is down the composer stays open: a message is kept and sent once the link is back.
  app.ui.message.disabled = !value && !app.conn;
  updateButtons(app);
  if (value && !document.documentElement.dataset.readyMs) {
    performance.mark("oa-ready");
    document.documentElement.dataset.readyMs = String(Math.round(performance.now()));
  }
  document.documentElement.dataset.ready = value ? "true" : "false";
}

export function setRunning(app, value) {
  app.running = value;
  updateButtons(app);
  // A turn that ended (answered, resumed as finished, stopped): the next waiting prompt may go.
  if (!value && app.outbox.length) setTimeout(() => app.outbox.flush(), 0);
}

export function updateButtons(app) {
  app.ui.send.disabled = (!app.ready && !app.conn) || app.running;
  app.ui.stop.hidden = !app.running;
  app.ui.send.hidden = app.running;
}

export function fail(app, message) {
  $("error-text").textContent = message;
  setConnection(app, "failed");
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
export function unpairedReason(error) {
  return error && error.code === "invalid_dpop_proof" ? "rebind" : "revoked";
}

/** Forgets every stored secret and conversation, stops the connection and shows the unpaired screen. */
export function unpaired(app, reason = "revoked") {
  if (app.conn) app.conn.stop();
  app.conn = null;
  clearTimeout(app.refreshTimer);
  clearTimeout(app.saveTimer);
  app.saveTimer = 0;
  auth.forget();
  app.current = null;
  app.outbox.clear();
  app.ui.transcript.clear();
  app.ui.permissions.replaceChildren();
  app.ui.message.value = "";
  clearAttachments(app);
  setRunning(app, false);
  $("unpaired-reason").textContent = UNPAIRED_REASONS[reason] || UNPAIRED_REASONS.revoked;
  setConnection(app, "unpaired");
  show("unpaired");
}

export function removeFragment() {
  if (location.hash) history.replaceState(null, "", location.pathname + location.search);
}
