// Safe Markdown: every piece of text becomes a DOM text node (textContent); nothing is ever parsed as HTML.
// Links keep only http: and https: targets and open with rel="noopener noreferrer". Image syntax becomes a link.
// Scanning is bounded (closing markers are looked for within LOOKAHEAD characters), so a hostile megabyte of
// brackets or asterisks stays linear. Nesting is bounded too (MAX_DEPTH levels of quotes, emphasis and links; deeper
// markup stays text), and a link's label never holds another link, so no input can exhaust the stack.

const LOOKAHEAD = 2000;
/** The deepest nesting rendered (block quotes in block quotes, emphasis in emphasis or in a link); deeper is text. */
export const MAX_DEPTH = 8;

/** Renders `text` as Markdown into a new DocumentFragment. */
export function renderMarkdown(text, depth = 0) {
  const fragment = document.createDocumentFragment();
  const lines = String(text).split("\n");
  let i = 0;
  let paragraph = [];
  const flush = () => {
    if (paragraph.length) {
      const p = el("p");
      inline(p, paragraph.join("\n"));
      fragment.append(p);
      paragraph = [];
    }
  };
  while (i < lines.length) {
    const line = lines[i];
    const fence = /^\s{0,3}(`{3,}|~{3,})/.exec(line);
    if (fence) {
      flush();
      const marker = fence[1];
      const body = [];
      i++;
      while (i < lines.length && !lines[i].trimStart().startsWith(marker)) body.push(lines[i++]);
      i++;
      const pre = el("pre");
      const code = el("code");
      code.textContent = body.join("\n");
      pre.append(code);
      fragment.append(pre);
      continue;
    }
    if (/^\s*$/.test(line)) { flush(); i++; continue; }
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    if (heading) {
      flush();
      const h = el("h" + Math.min(6, heading[1].length + 2));
      inline(h, heading[2]);
      fragment.append(h);
      i++;
      continue;
    }
    if (/^\s{0,3}([-*_])(\s*\1){2,}\s*$/.test(line)) { flush(); fragment.append(el("hr")); i++; continue; }
    if (/^\s{0,3}>/.test(line) && depth < MAX_DEPTH) {
      flush();
      const quote = [];
      while (i < lines.length && /^\s{0,3}>/.test(lines[i])) quote.push(lines[i++].replace(/^\s{0,3}>\s?/, ""));
      const block = el("blockquote");
      block.append(renderMarkdown(quote.join("\n"), depth + 1));
      fragment.append(block);
      continue;
    }
    const item = listItem(line);
    if (item) {
      flush();
      const list = el(item.ordered ? "ol" : "ul");
      if (item.ordered && item.start !== 1) list.start = item.start;
      while (i < lines.length) {
        const next = listItem(lines[i]);
        if (!next || next.ordered !== item.ordered) {
          // A continuation line indented under the item belongs to it.
          if (!next && /^\s{2,}\S/.test(lines[i]) && list.lastChild) {
            list.lastChild.append("\n");
            inline(list.lastChild, lines[i].trim());
            i++;
            continue;
          }
          break;
        }
        const li = el("li");
        const task = /^\[([ xX])\]\s+(.*)$/.exec(next.text);
        if (task) {
          li.append(task[1] === " " ? "☐ " : "☑ ");
          inline(li, task[2]);
        } else {
          inline(li, next.text);
        }
        list.append(li);
        i++;
      }
      fragment.append(list);
      continue;
    }
    paragraph.push(line);
    i++;
  }
  flush();
  return fragment;
}

function listItem(line) {
  const bullet = /^\s{0,3}[-*+]\s+(.*)$/.exec(line);
  if (bullet) return { ordered: false, text: bullet[1] };
  const number = /^\s{0,3}(\d{1,9})[.)]\s+(.*)$/.exec(line);
  if (number) return { ordered: true, start: Number(number[1]), text: number[2] };
  return null;
}

function el(name) {
  return document.createElement(name);
}

/** Appends the inline Markdown of `text` (code spans, bold, italic, links) to `parent`, as text nodes and elements.
 * `depth` counts the elements it is nested in; `inLink` is true inside a link's label, where links are text. */
export function inline(parent, text, depth = 0, inLink = false) {
  if (depth >= MAX_DEPTH) {
    parent.append(text);
    return;
  }
  const find = finder(text);
  let plain = "";
  const out = () => { if (plain) { parent.append(plain); plain = ""; } };
  let i = 0;
  const n = text.length;
  while (i < n) {
    const c = text[i];
    if (c === "\\" && i + 1 < n && /[\\`*_[\]()#+\-.!>~]/.test(text[i + 1])) { plain += text[i + 1]; i += 2; continue; }
    if (c === "`") {
      let ticks = 1;
      while (text[i + ticks] === "`") ticks++;
      const marker = "`".repeat(ticks);
      const end = find(marker, i + ticks);
      if (end !== -1 && end - i <= LOOKAHEAD * 5) {
        out();
        const code = el("code");
        code.textContent = text.slice(i + ticks, end);
        parent.append(code);
        i = end + ticks;
        continue;
      }
      plain += marker;
      i += ticks;
      continue;
    }
    if ((c === "*" || c === "_") && i + 1 < n) {
      const strong = text[i + 1] === c;
      const marker = strong ? c + c : c;
      const start = i + marker.length;
      const found = find(marker, start);
      const end = found === -1 || found - start > LOOKAHEAD ? -1 : found - start;
      const leftOk = c === "*" || i === 0 || !/\w/.test(text[i - 1]);
      if (end > 0 && leftOk && !/\s/.test(text[start]) && !/\s/.test(text[start + end - 1])) {
        out();
        const node = el(strong ? "strong" : "em");
        inline(node, text.slice(start, start + end), depth + 1, inLink);
        parent.append(node);
        i = start + end + marker.length;
        continue;
      }
      plain += marker;
      i += marker.length;
      continue;
    }
    if (!inLink && (c === "[" || (c === "!" && text[i + 1] === "["))) {
      const open = c === "!" ? i + 1 : i;
      const labelEnd = find("](", open + 1);
      if (labelEnd !== -1 && labelEnd - open <= LOOKAHEAD) {
        const urlStart = labelEnd + 2;
        const close = find(")", urlStart);
        const urlEnd = close === -1 || close - urlStart > LOOKAHEAD ? -1 : close - urlStart;
        if (urlEnd !== -1) {
          out();
          const label = text.slice(open + 1, labelEnd);
          const target = text.slice(urlStart, urlStart + urlEnd).trim().split(/\s+/)[0] || "";
          link(parent, label, target, depth);
          i = urlStart + urlEnd + 1;
          continue;
        }
      }
      plain += c;
      i++;
      continue;
    }
    if (!inLink && c === "h" && (text.startsWith("http://", i) || text.startsWith("https://", i)) && (i === 0 || /[\s(]/.test(text[i - 1]))) {
      let end = i;
      while (end < n && end - i < LOOKAHEAD && !/[\s<>"]/.test(text[end])) end++;
      while (end > i && /[.,;:!?)\]]/.test(text[end - 1])) end--;
      out();
      const url = text.slice(i, end);
      link(parent, url, url, depth);
      i = end;
      continue;
    }
    plain += c;
    i++;
  }
  out();
}

/** `find(marker, from)`: the next index of `marker` at or after `from`, like indexOf, remembering the last answer per
 * marker so that a left-to-right scan costs linear time however many unmatched markers the text holds. */
function finder(text) {
  const memo = new Map();
  return (marker, from) => {
    const last = memo.get(marker);
    if (last && from >= last.from && (last.at === -1 || from <= last.at)) return last.at;
    const at = text.indexOf(marker, from);
    memo.set(marker, { from, at });
    return at;
  };
}

/** The URL when it is absolute http(s), else null. */
export function safeURL(target) {
  try {
    const url = new URL(target);
    return url.protocol === "http:" || url.protocol === "https:" ? url.href : null;
  } catch {
    return null;
  }
}

function link(parent, label, target, depth) {
  const href = safeURL(target);
  if (!href) {
    // Not a web link (javascript:, data:, relative…): shown as text, never followed.
    parent.append(label + (target ? " (" + target + ")" : ""));
    return;
  }
  const a = el("a");
  a.href = href;
  a.rel = "noopener noreferrer";
  a.target = "_blank";
  a.referrerPolicy = "no-referrer";
  // The label is inline Markdown without links (a bare URL as its own label must not become a link again).
  inline(a, label || href, depth + 1, true);
  parent.append(a);
}
