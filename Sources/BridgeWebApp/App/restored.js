// Sessions the desktop kept across a restart (issue 25.2; Protocol.md, "Restored sessions"). When the agent could
// load the session again, nothing shows: the conversation simply goes on. When it could not, the bridge marks its
// answers `_meta.oa.readOnly = {reason: "agent_restarted"}` and refuses prompts (-32011): the page keeps the
// conversation, says why nothing more can be sent in it, and offers a new session.

/** The error code of a prompt on a read-only session. */
export const READ_ONLY_CODE = -32011;

/** The reason a bridge's answer gives for a read-only session (`"agent_restarted"`), or null. */
export function readOnlyReason(result) {
  const oa = result && typeof result === "object" && result._meta && typeof result._meta === "object" ? result._meta.oa : null;
  const readOnly = oa && typeof oa === "object" ? oa.readOnly : null;
  return readOnly && typeof readOnly === "object" && typeof readOnly.reason === "string" ? readOnly.reason : null;
}

/** Shows, once per session, the line that the agent restarted and a "New session" button calling `startNew`. */
export function showReadOnly(transcript, sessionId, startNew) {
  const container = transcript.container;
  if (container.querySelector(':scope > .restored[data-session="' + CSS.escape(String(sessionId)) + '"]')) return;
  const node = transcript.system("The agent restarted and cannot reopen this conversation: it is shown as it was, read-only.");
  if (!node) return;
  node.classList.add("restored");
  node.dataset.session = String(sessionId);
  const button = document.createElement("button");
  button.type = "button";
  button.textContent = "New session";
  button.addEventListener("click", () => {
    button.disabled = true;
    Promise.resolve(startNew()).finally(() => { button.disabled = false; });
  });
  node.append(" ", button);
}
