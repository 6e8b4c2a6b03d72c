// The Sessions dialog: the conversations this phone keeps and the ones the agent lists, to switch to or start anew.

import { $, str } from "./dom.js";
import { startOver, switchTo } from "./session.js";
import { firstUserText, readSession } from "./store.js";

export async function openSessions(app) {
  const dialog = $("sessions");
  const list = $("session-list");
  const known = new Map();
  for (let i = 0; i < localStorage.length; i++) {
    const key = localStorage.key(i);
    if (!key || !key.startsWith("oa-bridge.s.")) continue;
    const session = readSession(key.slice("oa-bridge.s.".length));
    if (session) known.set(session.id, { id: session.id, title: firstUserText(session), updated: session.updated });
  }
  if (app.conn && app.conn.ready && app.agent.capabilities.sessionCapabilities && app.agent.capabilities.sessionCapabilities.list !== undefined) {
    try {
      const result = await app.conn.call("session/list", app.agent.workingDirectory ? { cwd: app.agent.workingDirectory } : {});
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
    button.textContent = (app.current && item.id === app.current.id ? "● " : "") + (item.title || item.id);
    if (item.updated) button.append(Object.assign(document.createElement("span"), { className: "when", textContent: new Date(item.updated).toLocaleString() }));
    button.addEventListener("click", () => { dialog.close(); switchTo(app, item.id); });
    li.append(button);
    list.append(li);
  }
  dialog.showModal();
}

/** The Sessions button, its dialog's Close and New session. */
export function installSessions(app) {
  $("sessions-button").addEventListener("click", () => openSessions(app));
  $("close-sessions").addEventListener("click", () => $("sessions").close());
  $("new-session").addEventListener("click", async () => {
    $("sessions").close();
    await startOver(app);
  });
}
