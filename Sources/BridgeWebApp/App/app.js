// The app's state: one object, made here once and passed to every function that reads or changes it (no module
// keeps mutable state of the app's that others reassign). It holds the connection, what the agent said of itself,
// the current session, whether a turn runs, the tokens' refresh, the photos to send, and the page's elements and the
// outbox that work on them.

import { $ } from "./dom.js";
import { Outbox } from "./outbox.js";
import { setRunning } from "./screens.js";
import { newSession } from "./session.js";
import { persist } from "./store.js";
import { Transcript } from "./view.js";

/** The app's state and elements (sealed: a misspelt field is an error, not a new global). */
export function createApp() {
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
  const app = {
    ui,
    outbox: null,
    conn: null,
    agent: { capabilities: {}, workingDirectory: undefined, info: {} },
    current: null, // {id, lastSeq, modes, models, commands, log, updated}
    running: false,
    ready: false,
    refused: null, // an access token the bridge refused (4001): refresh it before the next connection
    attachments: [], // [{mimeType, data, url}]
    refreshTimer: 0,
    saveTimer: 0,
    resumed: null, // what the last _oa/session/resume said: {session, promptRunning, finishedWhileAway}
    unpairing: false, // the user's Unpair is under way (a 4003 close then means "you unpaired", not "revoked")
  };
  app.outbox = new Outbox(ui.transcript, {
    connection: () => app.conn,
    ready: () => app.ready,
    running: () => app.running,
    setRunning: (value) => setRunning(app, value),
    session: () => app.current,
    newSession: (connection) => newSession(app, connection),
    persist: () => persist(app),
  });
  return Object.seal(app);
}
