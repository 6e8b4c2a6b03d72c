// The composer: typing (slash commands suggested), sending through the outbox (outbox.js: nothing typed is lost),
// stopping a turn, photos, and the "new messages" button while the conversation is scrolled up.

import { $, str } from "./dom.js";

export async function sendPrompt(app) {
  if (app.running || !app.conn) return;
  const text = app.ui.message.value.trim();
  if (!text && app.attachments.length === 0) return;
  const prompt = app.attachments.map((a) => ({ type: "image", mimeType: a.mimeType, data: a.data }));
  if (text) prompt.push({ type: "text", text });
  app.ui.message.value = "";
  app.ui.message.style.height = "auto";
  clearAttachments(app);
  app.ui.commands.hidden = true;
  app.outbox.submit(prompt);
}

/** A user message from the stored conversation. */
export function showUserEntry(app, entry) {
  app.ui.transcript.user(entry.user);
}

export function suggestCommands(app) {
  const value = app.ui.message.value;
  const commands = app.current && Array.isArray(app.current.commands) ? app.current.commands : [];
  const match = /^\/(\S*)$/.exec(value);
  if (!match || commands.length === 0) {
    app.ui.commands.hidden = true;
    return;
  }
  const prefix = match[1].toLowerCase();
  const found = commands.filter((c) => c && typeof c.name === "string" && c.name.toLowerCase().startsWith(prefix)).slice(0, 8);
  app.ui.commands.replaceChildren();
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
      app.ui.message.value = "/" + command.name + " ";
      app.ui.commands.hidden = true;
      app.ui.message.focus();
    });
    li.append(button);
    app.ui.commands.append(li);
  }
  app.ui.commands.hidden = found.length === 0;
}

/** The photo as JPEG, at most 1280 px on its longer side and well under the bridge's frame limit. */
export async function shrink(file) {
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

export function showAttachments(app) {
  app.ui.attachments.replaceChildren();
  for (const [index, item] of app.attachments.entries()) {
    const button = document.createElement("button");
    button.type = "button";
    button.setAttribute("aria-label", "Remove photo " + (index + 1));
    const img = document.createElement("img");
    img.src = item.url;
    img.alt = "";
    button.append(img);
    button.addEventListener("click", () => {
      URL.revokeObjectURL(item.url);
      app.attachments.splice(index, 1);
      showAttachments(app);
    });
    app.ui.attachments.append(button);
  }
  app.ui.attachments.hidden = app.attachments.length === 0;
}

export function clearAttachments(app) {
  for (const item of app.attachments) URL.revokeObjectURL(item.url);
  app.attachments = [];
  showAttachments(app);
}

/** The composer's keys and buttons, the photo picker, and following the conversation. */
export function installComposer(app) {
  const newMessages = $("new-messages");
  app.ui.transcript.onUnseen = () => { newMessages.hidden = false; };
  app.ui.transcript.onFollow = () => { newMessages.hidden = true; };
  $("transcript").addEventListener("scroll", () => {
    if (!newMessages.hidden && app.ui.transcript.atBottom()) newMessages.hidden = true;
  }, { passive: true });
  newMessages.addEventListener("click", () => app.ui.transcript.toBottom());
  $("composer").addEventListener("submit", (event) => {
    event.preventDefault();
    sendPrompt(app);
  });

  app.ui.message.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing && matchMedia("(pointer: fine)").matches) {
      event.preventDefault();
      sendPrompt(app);
    }
  });

  app.ui.message.addEventListener("input", () => {
    app.ui.message.style.height = "auto";
    app.ui.message.style.height = Math.min(app.ui.message.scrollHeight, 160) + "px";
    suggestCommands(app);
  });

  app.ui.stop.addEventListener("click", () => {
    if (!app.current || !app.conn) return;
    try {
      app.conn.notify("session/cancel", { sessionId: app.current.id });
    } catch {
      // offline: the prompt goes on; try again once connected
      return;
    }
    app.ui.permissions.replaceChildren();
  });
  app.ui.attach.addEventListener("click", () => app.ui.photo.click());
  app.ui.photo.addEventListener("change", async () => {
    const file = app.ui.photo.files && app.ui.photo.files[0];
    app.ui.photo.value = "";
    if (!file) return;
    try {
      app.attachments.push(await shrink(file));
      showAttachments(app);
    } catch {
      app.ui.transcript.system("That photo could not be read.");
    }
  });
}
