// The link to the bridge: boot from the URL (a pairing link, stored tokens or nothing), pairing and its approval,
// the tokens' refresh, the connection and what its closing means (unpaired, refresh, diagnose).

import * as auth from "./auth.js";
import { $, sleep, str } from "./dom.js";
import * as pairing from "./pairing.js";
import { Connection } from "./rpc.js";
import { fail, removeFragment, setConnection, show, unpaired, unpairedReason } from "./screens.js";
import { onOpened } from "./session.js";
import { persist, restoreCurrent } from "./store.js";
import { onNotification, onRequest } from "./updates.js";

export async function boot(app) {
  const payload = auth.payloadFromFragment(location.hash);
  const state = auth.load();
  if (payload) return openLink(app, payload, state);
  if (state && (state.tokens || state.noAuth)) return startChat(app);
  if (state && state.pending) return pair(app, state.pending.token, state.name, state.wsPath, state.pending.deviceId);
  if (location.hash) {
    removeFragment();
    return fail(app, "This link is damaged: it does not hold a pairing code. Scan the QR code on the desktop again.");
  }
  setConnection(app, "failed");
  show("nopair");
}

/** A pairing link, at start or opened in this tab later (hashchange): pairs, asks first, or is ignored (pairing.js). */
export async function openLink(app, payload, state) {
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
      return startChat(app);
    case "pair":
      stopChat(app);
      return pair(app, payload.token, str(payload.name), wsPath, null);
    case "confirm":
      return confirmReplace(app, payload, state, wsPath);
    default:
      // A link without a pairing code: what is stored stays as it is (a phone waiting for approval goes on waiting).
      if (app.conn) return undefined;
      if (state && state.pending && !state.tokens) return pair(app, state.pending.token, state.name, state.wsPath, state.pending.deviceId);
      return startChat(app);
  }
}

/** Asks, in the page, whether a new pairing code replaces this phone's pairing; keeps it unless the user says so. */
export function confirmReplace(app, payload, state, wsPath) {
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
        stopChat(app);
        resolve(pair(app, payload.token, str(payload.name), wsPath, null, state));
      } else {
        if (wasChat || app.conn) show("chat");
        resolve(app.conn ? undefined : startChat(app));
      }
    };
    replace.onclick = () => done(true);
    keep.onclick = () => done(false);
  });
}

/** Stops the connection and the token refresh (before pairing anew). */
export function stopChat(app) {
  if (app.conn) app.conn.stop();
  app.conn = null;
  clearTimeout(app.refreshTimer);
  persist(app);
}

export function wsPathOf(payload) {
  try {
    return new URL(payload.ws).pathname || "/";
  } catch {
    return "/";
  }
}

/** Pairs with `pairingToken`. `previous`: the pairing this replaces (the user agreed); kept if the new code fails. */
export async function pair(app, pairingToken, bridgeName, wsPath, deviceId, previous = null) {
  if (bridgeName) $("bridge-name").textContent = bridgeName;
  setConnection(app, "pairing");
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
          return fail(app, "This pairing code was already used or has expired. Show a new one on the desktop (oa-bridge pair --new) and scan it again.");
        }
        if (error.code === "device_revoked" && !(previous && previous.tokens)) return unpaired(app);
        if (error.status === 429) return fail(app, "Too many attempts from this network. Wait a minute and scan the code again.");
        return fail(app, "The desktop refused to pair (" + (error.code || error.status) + "). Scan a new QR code on the desktop.");
      }
      // The network: keep the fragment and try again shortly.
      setConnection(app, "offline");
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
        app.current = null;
      }
      // A short link does not name the bridge: the exchange's answer does (issue 29 item 2).
      const named = bridgeName || (result.bridge && typeof result.bridge.name === "string" ? result.bridge.name.slice(0, 200) : "");
      if (named) $("bridge-name").textContent = named;
      auth.save({ tokens: result.tokens, name: named, wsPath });
      removeFragment();
      return startChat(app);
    }
    pending = result.pending;
    auth.save({ pending: { token: pairingToken, deviceId: pending }, name: bridgeName, wsPath });
    removeFragment();
    setConnection(app, "waiting");
    $("waiting-name").textContent = name;
    $("waiting-command").textContent = "oa-bridge devices approve " + String(pending).slice(0, 8);
    show("waiting");
    await sleep(1500);
  }
  return fail(app, "Nobody approved this phone on the desktop. Scan the QR code again to retry.");
}

export function scheduleRefresh(app) {
  clearTimeout(app.refreshTimer);
  const state = auth.load();
  if (!state || !state.tokens) return;
  const wait = Math.max(5_000, state.tokens.accessExp - Date.now() - auth.REFRESH_MARGIN_MS + 1_000);
  app.refreshTimer = setTimeout(() => refreshNow(app), Math.min(wait, 2_000_000_000));
}

export async function refreshNow(app) {
  try {
    await auth.fresh();
  } catch (error) {
    if (error instanceof auth.AuthError && error.unpaired) return unpaired(app, unpairedReason(error));
    // The network or the bridge is away: try again in a while; the connection's own attempts refresh too.
    app.refreshTimer = setTimeout(() => refreshNow(app), 15_000);
    return;
  }
  scheduleRefresh(app);
}

export async function accessToken(app) {
  const state = auth.load();
  if (!state) throw new auth.AuthError(401, "not_paired");
  if (state.noAuth) return null;
  const tokens = await auth.fresh(app.refused);
  app.refused = null;
  scheduleRefresh(app);
  return tokens.access;
}

/** After a failed or refused connection: is the device still paired? Unpairs when the bridge says it is not. */
export async function diagnose(app) {
  const state = auth.load();
  if (state && state.noAuth) return diagnoseWithoutAuth(app);
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
    if (error instanceof auth.AuthError && error.unpaired) unpaired(app, unpairedReason(error));
  }
}

/** Without tokens (a link from a bridge without auth): when the bridge wants tokens after all (it answers 401), the
 * phone needs pairing; reconnecting would never succeed. */
export async function diagnoseWithoutAuth(app) {
  let response;
  try {
    response = await fetch("/api/status", { cache: "no-store", credentials: "omit" });
  } catch {
    return; // the network: the connection retries
  }
  if (response.status === 401 || response.status === 403) unpaired(app, "needsPairing");
}

export function startChat(app) {
  const state = auth.load() || {};
  if (state.name) $("bridge-name").textContent = state.name;
  show("chat");
  restoreCurrent(app);
  app.outbox.restore();
  app.conn = new Connection(state.wsPath || "/", {
    token: () => accessToken(app),
    upgradeProof: auth.upgradeProof,
    fetcher: auth.httpFetcher,
    opened: (connection) => onOpened(app, connection),
    request: (message) => onRequest(app, message),
    notification: (message) => onNotification(app, message),
    state: (name, detail) => setConnection(app, name, detail),
    closed: (code, reason, wasOpen) => {
      if (code === 4003) {
        unpaired(app, app.unpairing ? "user" : "revoked");
        return "stop";
      }
      if (reason instanceof auth.AuthError) {
        if (reason.unpaired) {
          unpaired(app, unpairedReason(reason));
          return "stop";
        }
        return undefined;
      }
      if (code === 4001) {
        app.refused = (auth.load() || {}).tokens?.access || null;
        return "now";
      }
      if (!wasOpen) {
        auth.nonceStale();
        diagnose(app);
      }
      return undefined;
    },
  });
  app.conn.open();
}

/** A pairing link opened in this tab later, the tokens refreshed when the page is shown again, the error screen's retry. */
export function installLink(app) {
  addEventListener("hashchange", () => {
    // A new pairing link opened in this tab: pair (asking first when paired). Only the app's own pages have links here.
    const payload = auth.payloadFromFragment(location.hash);
    if (!payload) return;
    openLink(app, payload, auth.load()).catch((error) => fail(app, "The app could not pair: " + String(error && error.message).slice(0, 200)));
  });
  $("error-retry").addEventListener("click", () => location.reload());
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState !== "visible") return;
    const state = auth.load();
    if (state && state.tokens && state.tokens.accessExp - Date.now() < auth.REFRESH_MARGIN_MS) refreshNow(app);
  });
}
