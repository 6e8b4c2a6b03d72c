// The conversations kept in localStorage: the current session's id, each session's log (replayed when the page
// opens), written soon after each change and bounded in size.

import { showUserEntry } from "./composer.js";
import { $, str } from "./dom.js";
import { showLostUpdates } from "./session.js";
import { applyUpdate } from "./updates.js";

/** Where the current session's id is kept. */
export const SESSION_KEY = "oa-bridge.session";
const sessionKey = (id) => "oa-bridge.s." + id;
const MAX_LOG_CHARS = 3_000_000;

export function restoreCurrent(app) {
  const id = localStorage.getItem(SESSION_KEY);
  app.current = id ? readSession(id) : null;
  app.ui.transcript.clear();
  if (!app.current) return;
  replayLog(app);
}

export function readSession(id) {
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

export function replayLog(app) {
  app.ui.transcript.clear();
  for (const entry of app.current.log) {
    try {
      if (entry.user) showUserEntry(app, entry);
      else if (entry.update) applyUpdate(app, entry.update, entry.bridge === true);
      else if (typeof entry.lost === "number") showLostUpdates(app);
    } catch (error) {
      // One entry the page cannot show never keeps the rest (or the app) from opening.
      console.warn("oa-bridge: a stored entry was skipped:", error && error.message);
    }
  }
  app.ui.transcript.flush();
  const transcript = $("transcript");
  transcript.scrollTop = transcript.scrollHeight;
}

export function forgetCurrent(app) {
  if (app.current) localStorage.removeItem(sessionKey(app.current.id));
  localStorage.removeItem(SESSION_KEY);
  app.current = null;
}

export function persistSoon(app) {
  if (!app.saveTimer) app.saveTimer = setTimeout(() => persist(app), 250);
}

export function persist(app) {
  clearTimeout(app.saveTimer);
  app.saveTimer = 0;
  if (!app.current || app.current.loading) return;
  app.current.updated = Date.now();
  let text = JSON.stringify(app.current);
  // Keep the newest part of a long conversation; the oldest entries go first.
  while (text.length > MAX_LOG_CHARS && app.current.log.length > 1) {
    app.current.log.splice(0, Math.ceil(app.current.log.length / 4));
    text = JSON.stringify(app.current);
  }
  try {
    localStorage.setItem(sessionKey(app.current.id), text);
  } catch {
    // Storage full: keep what fits (the bridge's replay still has the rest while the session lives).
    try {
      app.current.log = app.current.log.slice(-50);
      localStorage.setItem(sessionKey(app.current.id), JSON.stringify(app.current));
    } catch {
      // give up persisting this time
    }
  }
}

export function firstUserText(session) {
  for (const entry of session.log) {
    if (entry.user) {
      const text = entry.user.map((b) => (b && b.type === "text" ? str(b.text) : "")).join(" ").trim();
      if (text) return text.slice(0, 60);
    }
  }
  return "";
}
