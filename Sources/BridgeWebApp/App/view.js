// The conversation as DOM. Every string from the agent or its tools is untrusted: it reaches the page only as
// textContent or through the safe Markdown renderer, never as HTML.

import { renderMarkdown } from "./markdown.js";

const IMAGE_TYPES = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);

function el(name, className, text) {
  const node = document.createElement(name);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

function str(value) {
  return typeof value === "string" ? value : value === undefined || value === null ? "" : JSON.stringify(value, null, 2);
}

/** The text of an ACP content block (text, resource, resource_link), or "" */
function blockText(block) {
  if (!block || typeof block !== "object") return "";
  if (block.type === "text") return str(block.text);
  if (block.type === "resource_link") return "[" + str(block.name || block.uri) + "](" + str(block.uri) + ")";
  if (block.type === "resource" && block.resource) return str(block.resource.text || block.resource.uri);
  return "";
}

function imageOf(block) {
  if (!block || block.type !== "image" || typeof block.data !== "string") return null;
  const type = String(block.mimeType || "");
  if (!IMAGE_TYPES.has(type) || !/^[A-Za-z0-9+/=\s]*$/.test(block.data.slice(0, 4096))) return null;
  const img = el("img");
  img.alt = "image from the agent";
  img.src = "data:" + type + ";base64," + block.data;
  return img;
}

/** A line diff of two texts: [{op: " "|"+"|"-", line}] (LCS; falls back to all-removed/all-added when large). */
export function lineDiff(oldText, newText) {
  const a = oldText ? oldText.split("\n") : [];
  const b = newText ? newText.split("\n") : [];
  if (a.length * b.length > 4_000_000) {
    return [...a.map((line) => ({ op: "-", line })), ...b.map((line) => ({ op: "+", line }))];
  }
  const rows = a.length + 1;
  const cols = b.length + 1;
  const table = new Uint32Array(rows * cols);
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      table[i * cols + j] = a[i] === b[j] ? table[(i + 1) * cols + j + 1] + 1 : Math.max(table[(i + 1) * cols + j], table[i * cols + j + 1]);
    }
  }
  const out = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) { out.push({ op: " ", line: a[i] }); i++; j++; }
    else if (table[(i + 1) * cols + j] >= table[i * cols + j + 1]) out.push({ op: "-", line: a[i++] });
    else out.push({ op: "+", line: b[j++] });
  }
  while (i < a.length) out.push({ op: "-", line: a[i++] });
  while (j < b.length) out.push({ op: "+", line: b[j++] });
  return out;
}

export class Transcript {
  constructor(container) {
    this.container = container;
    // Whether the view follows new content: true until the user scrolls away from the bottom, true again once they
    // scroll back (or tap "new messages"). Kept from scroll events, so a transcript that shrinks (a permission card or
    // a growing message box below it) still follows.
    this.following = true;
    // Only the user scrolls up (content added below never lowers scrollTop): that stops following.
    let lastTop = 0;
    container.addEventListener("scroll", () => {
      const top = container.scrollTop;
      if (this.atBottom()) this.following = true;
      else if (top < lastTop - 2) this.following = false;
      lastTop = top;
    }, { passive: true });
    if (typeof ResizeObserver === "function") {
      new ResizeObserver(() => { if (this.following) this.container.scrollTop = this.container.scrollHeight; }).observe(container);
    }
    this.clear();
  }

  clear() {
    this.container.replaceChildren();
    this.following = true;
    this.open = null; // the message being streamed: {kind, node, text}
    this.tools = new Map();
    this.plan = null;
    this.pendingRender = new Set();
  }

  /** Whether the newest content is in view (within 80 px of the bottom). */
  atBottom() {
    const c = this.container;
    return c.scrollHeight - c.scrollTop - c.clientHeight < 80;
  }

  /** Scrolls to the newest content, and follows it from now on. */
  toBottom() {
    this.following = true;
    this.container.scrollTop = this.container.scrollHeight;
    if (this.onFollow) this.onFollow();
  }

  /** Runs `action` (which adds or changes content) and follows it when the view follows (or `force`); else calls
   * `onUnseen` (the "new messages" button), so reading older messages is never interrupted. */
  stick(action, force = false) {
    const follow = force || this.following || this.atBottom();
    const before = this.container.scrollHeight;
    action();
    if (follow) this.toBottom();
    else if (this.container.scrollHeight !== before && this.onUnseen) this.onUnseen();
  }

  /** A message the user sent (text and image blocks): always scrolled into view. */
  user(blocks) {
    let node = null;
    this.stick(() => {
      node = el("div", "msg user");
      node.dataset.role = "user";
      for (const block of blocks || []) {
        if (block.type === "image") {
          const img = imageOf(block);
          if (img) node.append(img);
        } else {
          node.append(blockText(block));
        }
      }
      this.container.append(node);
      this.open = null;
    }, true);
    return node;
  }

  /** Moves a message (a prompt that waited) to the end, where its answer follows, and scrolls to it. */
  moveToEnd(node) {
    this.stick(() => {
      if (node.parentNode === this.container && node !== this.container.lastElementChild) this.container.append(node);
      this.open = null;
    }, true);
  }

  /** A line from the app itself (session started, gap, …). */
  system(text) {
    const node = el("p", "system", text);
    this.stick(() => {
      this.container.append(node);
      this.open = null;
    });
    return node;
  }

  /** Applies one session/update's `update` object. `fromBridge`: a `user_message_chunk` is the bridge's record of a
   * prompt a user sent (shown as the user's words); any other is the agent's replay, shown marked as such. */
  apply(update, fromBridge = false) {
    if (!update || typeof update !== "object") return;
    const kind = update.sessionUpdate;
    this.stick(() => {
      switch (kind) {
        case "agent_message_chunk": return this.chunk("agent", update.content);
        case "user_message_chunk": return this.chunk(fromBridge ? "user" : "replayed", update.content);
        case "agent_thought_chunk": return this.chunk("thought", update.content);
        case "tool_call": return this.tool(update, true);
        case "tool_call_update": return this.tool(update, false);
        case "plan": return this.showPlan(update.entries);
        default: return undefined;
      }
    });
  }

  chunk(kind, content) {
    const image = imageOf(content);
    if (this.open === null || this.open.kind !== kind) {
      let node;
      let body;
      if (kind === "thought") {
        node = el("details", "thought");
        node.append(el("summary", null, "Thinking"));
        body = el("div");
        node.append(body);
      } else if (kind === "replayed") {
        // Words the agent says the user wrote (its replay of a loaded session, or an impersonation): never shown as
        // the user's own.
        node = el("div", "msg user replayed");
        node.dataset.origin = "agent";
        node.append(el("span", "origin", "replayed by the agent"));
        body = el("div");
        node.append(body);
      } else {
        node = el("div", kind === "agent" ? "msg agent" : "msg user");
        body = node;
      }
      node.dataset.role = kind;
      this.container.append(node);
      this.open = { kind, node, body, text: "" };
    }
    const open = this.open;
    if (image) {
      open.body.append(image);
      return;
    }
    open.text += blockText(content);
    this.schedule(open);
  }

  /** Re-renders a streaming message at most once per frame. */
  schedule(open) {
    if (this.pendingRender.has(open)) return;
    this.pendingRender.add(open);
    const render = () => {
      if (!this.pendingRender.delete(open)) return; // already rendered (flush, or the other timer)
      this.stick(() => this.render(open));
    };
    // A frame when the page is drawn; a timer too, since a page in the background gets no frames.
    requestAnimationFrame(render);
    setTimeout(render, 100);
  }

  render(open) {
    if (open.kind !== "agent") {
      open.body.textContent = open.text;
      return;
    }
    try {
      open.body.replaceChildren(renderMarkdown(open.text));
    } catch (error) {
      // Whatever the renderer cannot handle is shown as plain text: a message is never lost to it.
      console.warn("oa-bridge: message shown as plain text:", error && error.message);
      open.body.textContent = open.text;
    }
  }

  /** Renders everything still waiting for a frame (before a snapshot or a test). */
  flush() {
    for (const open of [...this.pendingRender]) {
      this.pendingRender.delete(open);
      this.render(open);
    }
  }

  tool(update, isNew) {
    const id = str(update.toolCallId);
    let card = this.tools.get(id);
    if (!card) {
      const node = el("article", "tool");
      node.dataset.toolCallId = id;
      const header = el("header");
      const title = el("span", "title");
      const status = el("span", "status");
      header.append(title, status);
      const body = el("div", "body");
      node.append(header, body);
      this.container.append(node);
      card = { node, title, status, body, data: {} };
      this.tools.set(id, card);
      this.open = null;
    } else if (isNew) {
      card.data = {};
    }
    const data = card.data;
    for (const key of ["title", "kind", "status", "content", "rawInput", "rawOutput", "locations"]) {
      if (update[key] !== undefined && update[key] !== null) data[key] = update[key];
    }
    card.title.textContent = str(data.title) || "Tool call";
    const status = str(data.status) || "pending";
    card.status.textContent = status.replace(/_/g, " ");
    card.status.dataset.status = status;
    card.node.dataset.status = status;
    card.body.replaceChildren(...this.toolBody(data));
  }

  toolBody(data) {
    const parts = [];
    if (Array.isArray(data.locations) && data.locations.length) {
      parts.push(el("p", "muted", data.locations.map((l) => str(l && l.path) + (l && l.line ? ":" + l.line : "")).join(", ")));
    }
    for (const item of Array.isArray(data.content) ? data.content : []) {
      if (!item || typeof item !== "object") continue;
      if (item.type === "diff") {
        const pre = el("pre", "diff");
        pre.append(el("span", "path", str(item.path)));
        for (const { op, line } of lineDiff(str(item.oldText), str(item.newText))) {
          pre.append(el("span", op === "+" ? "add" : op === "-" ? "del" : "same", op + " " + line));
        }
        parts.push(pre);
      } else if (item.type === "terminal") {
        parts.push(el("p", "muted", "Terminal " + str(item.terminalId)));
      } else if (item.type === "content") {
        const image = imageOf(item.content);
        if (image) parts.push(image);
        else parts.push(el("pre", "output", blockText(item.content)));
      }
    }
    for (const [key, label] of [["rawInput", "Input"], ["rawOutput", "Output"]]) {
      if (data[key] === undefined) continue;
      const details = el("details");
      details.append(el("summary", null, label));
      details.append(el("pre", "output", str(data[key])));
      parts.push(details);
    }
    return parts;
  }

  showPlan(entries) {
    if (!this.plan || !this.plan.isConnected) {
      this.plan = el("section", "plan");
      this.plan.dataset.role = "plan";
      this.container.append(this.plan);
    }
    const list = el("ol");
    for (const entry of Array.isArray(entries) ? entries : []) {
      const status = str(entry && entry.status);
      const marker = status === "completed" ? "✓ " : status === "in_progress" ? "▸ " : "○ ";
      const li = el("li", null, marker + str(entry && entry.content));
      li.dataset.status = status;
      list.append(li);
    }
    this.plan.replaceChildren(el("h3", null, "Plan"), list);
    this.open = null;
  }
}
