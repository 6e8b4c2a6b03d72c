// The agent's session: initialize, attach (resume without loss, load, or a new one), switching sessions, the
// agent's exit checked with the bridge, and the mode and model pickers.

import { $, str } from "./dom.js";
import { readOnlyReason, showReadOnly } from "./restored.js";
import { ConnectionLost, RPCError } from "./rpc.js";
import { setReady, setRunning } from "./screens.js";
import { SESSION_KEY, forgetCurrent, persist, persistSoon, readSession, replayLog } from "./store.js";

export async function onOpened(app, connection) {
  performance.mark("oa-open");
  const init = await connection.call("initialize", {
    protocolVersion: 1,
    clientCapabilities: {},
    clientInfo: { name: "oa-bridge-web", title: "oa-bridge web app", version: "0.1.0" },
  });
  app.agent = {
    capabilities: (init && init.agentCapabilities) || {},
    workingDirectory: init && init._meta ? init._meta.workingDirectory : undefined,
    info: (init && init.agentInfo) || {},
  };
  const images = app.agent.capabilities.promptCapabilities && app.agent.capabilities.promptCapabilities.image === true;
  app.ui.attach.hidden = !images;
  performance.mark("oa-initialized");
  await attach(app, connection);
  setReady(app, true);
  app.outbox.settle(app.resumed);
  app.outbox.flush();
}

/** Attaches to the current session (resume without loss) or starts one. */
export async function attach(app, connection) {
  if (app.current) {
    try {
      const result = await connection.call("_oa/session/resume", { sessionId: app.current.id, lastSeq: app.current.lastSeq });
      app.resumed = { session: app.current.id, promptRunning: result && result.promptRunning === true, finishedWhileAway: !!(result && result.finishedWhileAway) };
      setRunning(app, result && result.promptRunning === true);
      if (result && result.finishedWhileAway && result.finishedWhileAway !== "end_turn") {
        app.ui.transcript.system("The answer ended while this phone was away (" + result.finishedWhileAway + ").");
      }
      // Issue 25 (F7): the desktop's bridge stopped before it stored its newest output; what this phone missed of it is gone.
      if (result && result.lostUpdates) tellLostUpdates(app, result.lostUpdates.throughSeq);
      if (readOnlyReason(result)) showReadOnly(app.ui.transcript, app.current.id, () => startOver(app));
      showPickers(app);
      return;
    } catch (error) {
      if (!(error instanceof RPCError) || error.code !== -32002) throw error;
      if (error.data && typeof error.data.oldestSeq === "number") {
        app.ui.transcript.system("Some output from while this phone was away is no longer held by the desktop.");
        app.current.lastSeq = typeof error.data.lastSeq === "number" ? error.data.lastSeq : app.current.lastSeq;
        persist(app);
        showPickers(app);
        return;
      }
      if (app.agent.capabilities.loadSession === true) {
        try {
          await loadSession(app, connection, app.current.id);
          return;
        } catch (loadError) {
          if (loadError instanceof ConnectionLost) throw loadError;
        }
      }
      app.ui.transcript.system("That session has ended (the desktop's bridge restarted or the agent stopped).");
      forgetCurrent(app);
    }
  }
  await newSession(app, connection);
}

export async function newSession(app, connection) {
  const params = { mcpServers: [] };
  if (app.agent.workingDirectory) params.cwd = app.agent.workingDirectory;
  const result = await connection.call("session/new", params);
  app.current = { id: str(result.sessionId), lastSeq: 0, modes: result.modes || null, models: result.models || null, commands: [], log: [], updated: Date.now() };
  localStorage.setItem(SESSION_KEY, app.current.id);
  app.ui.transcript.clear();
  app.ui.permissions.replaceChildren();
  setRunning(app, false);
  persist(app);
  showPickers(app);
}

/**
 * Says once that output up to `throughSeq` of the current session may be missing (the desktop's bridge stopped before
 * it stored it), however the page learnt of it: the bridge's answer to a resume or a load, or an update numbered past
 * a hole (a resume whose answer never arrived, issue 25's chaos run). The page then counts as told through it.
 */
export function tellLostUpdates(app, throughSeq) {
  if (!app.current) return;
  const through = typeof throughSeq === "number" ? throughSeq : app.current.lastSeq;
  if (typeof app.current.toldLostThrough === "number" && app.current.toldLostThrough >= through) return;
  app.current.toldLostThrough = through;
  if (through > app.current.lastSeq) app.current.lastSeq = through;
  // Kept in the conversation's log at its place, and saved at once: a reload (or a page closed right after) still
  // shows where the hole is; the bridge will not say it again to a page that counts as told.
  app.current.log.push({ lost: through });
  showLostUpdates(app);
  persist(app);
}

/** The line that marks a hole in the conversation (a `{lost}` entry of the log). */
export function showLostUpdates(app) {
  app.ui.transcript.system(LOST_UPDATES_LINE);
}

const LOST_UPDATES_LINE = "Some output may be missing here: the desktop's bridge stopped unexpectedly before it saved it.";

export async function loadSession(app, connection, id) {
  const previous = app.current && app.current.id === id ? app.current : null;
  app.current = { id, lastSeq: 0, modes: null, models: null, commands: [], log: [], updated: Date.now(), loading: true };
  app.ui.transcript.clear();
  const params = { sessionId: id, mcpServers: [] };
  if (app.agent.workingDirectory) params.cwd = app.agent.workingDirectory;
  try {
    const result = await connection.call("session/load", params);
    app.current.modes = (result && result.modes) || (previous && previous.modes) || null;
    app.current.models = (result && result.models) || null;
    // Issue 25 (F7): the replay lacks what the desktop's bridge lost when it stopped unexpectedly.
    if (result && result._meta && result._meta.lostUpdates) tellLostUpdates(app, result._meta.lostUpdates.throughSeq);
  } finally {
    app.current.loading = false;
  }
  localStorage.setItem(SESSION_KEY, id);
  persist(app);
  showPickers(app);
}

export async function switchTo(app, id) {
  if (!app.conn || !app.conn.ready || (app.current && app.current.id === id)) return;
  persist(app);
  localStorage.setItem(SESSION_KEY, id);
  app.current = readSession(id) || { id, lastSeq: 0, modes: null, models: null, commands: [], log: [], updated: Date.now() };
  app.ui.permissions.replaceChildren();
  replayLog(app);
  setRunning(app, false);
  try {
    await attach(app, app.conn);
  } catch (error) {
    app.ui.transcript.system("Could not open that session: " + String(error.message).slice(0, 200));
  }
}

/** A new session in place of the current one: the Sessions dialog's New session, and a read-only session's (restored.js). */
export async function startOver(app) {
  if (!app.conn || !app.conn.ready) return;
  persist(app);
  try {
    await newSession(app, app.conn);
  } catch (error) {
    app.ui.transcript.system("Could not start a session: " + String(error.message).slice(0, 200));
  }
}

/** `_oa/agent_exited`: the bridge forgets the sessions of an agent that died, so asking it about the current session
 * tells a real exit (unknown session) from a forged notice (the session lives on: nothing changes). */
export async function checkAgentExited(app) {
  if (!app.current || !app.conn || !app.conn.ready) return;
  const session = app.current.id;
  try {
    const result = await app.conn.call("_oa/session/resume", { sessionId: session, lastSeq: app.current.lastSeq });
    // The bridge keeps the session for the next agent: it goes on, or (an agent that cannot load it) stays readable.
    if (readOnlyReason(result) && app.current && app.current.id === session) showReadOnly(app.ui.transcript, session, () => startOver(app));
    return; // the session lives: not the bridge's notice
  } catch (error) {
    if (!(error instanceof RPCError) || !app.current || app.current.id !== session) return;
    if (error.code !== -32002 && error.code !== -32006) return;
    if (error.data && typeof error.data.oldestSeq === "number") return; // a gap: the session lives
  }
  app.ui.transcript.system("The agent stopped. A new session starts when you send a message.");
  app.ui.permissions.replaceChildren();
  setRunning(app, false);
  // The conversation stays readable under Sessions; this page starts a new session with the next message.
  persist(app);
  localStorage.removeItem(SESSION_KEY);
  app.current = null;
}

export function showPickers(app) {
  fillPicker($("mode-picker"), $("mode-select"), app.current && app.current.modes, "availableModes", "id", "currentModeId");
  fillPicker($("model-picker"), $("model-select"), app.current && app.current.models, "availableModels", "modelId", "currentModelId");
}

export function fillPicker(label, select, source, listKey, idKey, currentKey) {
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

/** The mode and model pickers: a choice is sent to the agent, and shown again as it was when refused. */
export function installPickers(app) {
  $("mode-select").addEventListener("change", async (event) => {
    if (!app.current || !app.conn) return;
    const modeId = event.target.value;
    try {
      await app.conn.call("session/set_mode", { sessionId: app.current.id, modeId });
      if (app.current.modes) app.current.modes.currentModeId = modeId;
      persistSoon(app);
    } catch (error) {
      app.ui.transcript.system("The mode was not changed: " + String(error.message).slice(0, 200));
      showPickers(app);
    }
  });

  $("model-select").addEventListener("change", async (event) => {
    if (!app.current || !app.conn) return;
    const modelId = event.target.value;
    try {
      await app.conn.call("session/set_model", { sessionId: app.current.id, modelId });
      if (app.current.models) app.current.models.currentModelId = modelId;
      persistSoon(app);
    } catch (error) {
      app.ui.transcript.system("The model was not changed: " + String(error.message).slice(0, 200));
      showPickers(app);
    }
  });
}
