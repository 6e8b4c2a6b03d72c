// Pairing and tokens. The tokens live in localStorage of this origin; the pairing payload arrives in the URL
// fragment, which the browser never sends to the server. Refreshes are serialised across tabs with the Web Locks
// API, so a rotated refresh token is never presented twice (that would revoke the whole token family).
// With DPoP (issue 30, dpop.js) the tokens are bound to a key this page cannot read out: the exchange sends a proof,
// and a bound family (token_type "DPoP") sends one with every refresh and every use of its access token.

import * as dpop from "./dpop.js";

const KEY = "oa-bridge.auth";
/** Refresh this long before the access token expires. */
export const REFRESH_MARGIN_MS = 120_000;

/** A refusal from the bridge's auth API: `status` (401/403/…) and its `code` (`device_revoked`, …). */
export class AuthError extends Error {
  constructor(status, code, message) {
    super(message || code || "HTTP " + status);
    this.status = status;
    this.code = code;
  }
  /** Whether this device must pair again (revoked, expired refresh token, reused refresh token, unknown token, or
   * a bridge that wants a key this device's tokens are not bound to: invalid_dpop_proof). */
  get unpaired() {
    return this.status === 401 || this.status === 403 || this.code === "invalid_dpop_proof";
  }
}

/** The stored state: `{tokens?, pending?, name, wsPath}`, or null. */
export function load() {
  try {
    return JSON.parse(localStorage.getItem(KEY) || "null");
  } catch {
    return null;
  }
}

export function save(state) {
  localStorage.setItem(KEY, JSON.stringify(state));
}

/** Forgets the pairing: tokens, pending approval and every stored conversation, and this origin's DPoP key unless
 * `keepKey` (a new pairing that replaces the old one is bound to the same key). */
export function forget({ keepKey = false } = {}) {
  const keys = [];
  for (let i = 0; i < localStorage.length; i++) {
    const key = localStorage.key(i);
    if (key && key.startsWith("oa-bridge.")) keys.push(key);
  }
  for (const key of keys) localStorage.removeItem(key);
  if (!keepKey) dpop.forgetKey();
}

/** Decodes the pairing payload from a URL fragment (`#<base64url JSON>`, or the short link's `#1<digits>`); null when
 * absent or unreadable. */
export function payloadFromFragment(hash) {
  const text = (hash || "").replace(/^#/, "");
  if (!text) return null;
  if (/^[0-9]+$/.test(text)) return payloadFromDigits(text);
  try {
    const standard = text.replace(/-/g, "+").replace(/_/g, "/");
    const binary = atob(standard + "===".slice((standard.length + 3) % 4));
    const bytes = Uint8Array.from(binary, (c) => c.charCodeAt(0));
    const payload = JSON.parse(new TextDecoder().decode(bytes));
    return payload && typeof payload === "object" ? payload : null;
  } catch {
    return null;
  }
}

/** The short link's fragment (issue 29 item 2): `1` + the 16-byte pairing code and the pin's first 16 bytes, `2` + the
 * code (plaintext bridge), `3` + the pin prefix (`--auth none`), each a 39-digit number. The rest (the bridge's name)
 * comes with the exchange's answer; this page's origin is the bridge's address. Null when damaged. */
function payloadFromDigits(text) {
  const kind = text[0];
  const body = text.slice(1);
  const expected = { 1: 78, 2: 39, 3: 39 }[kind];
  if (!expected || body.length !== expected) return null;
  const values = [];
  for (let at = 0; at < body.length; at += 39) {
    const value = BigInt(body.slice(at, at + 39));
    if (value >= 1n << 128n) return null;
    const bytes = new Uint8Array(16);
    for (let i = 15, v = value; i >= 0; i--, v >>= 8n) bytes[i] = Number(v & 255n);
    values.push(bytes);
  }
  const base64 = (bytes) => btoa(String.fromCharCode(...bytes));
  const payload = { short: true, http: (kind === "2" ? "http://" : "https://") + location.host };
  if (kind !== "3") payload.token = "oa_p_" + base64(values[0]).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  if (kind !== "2") payload.pin = "sha256/" + base64(values[kind === "1" ? 1 : 0]);
  return payload;
}

/** A name for this device a user can tell from others: the browser, the phone model (or platform) and its system
 * version, e.g. "Safari on iPhone (iOS 17.2)", "Chrome on Pixel 7 (Android 14)" (issue 29 item 9). The desktop's
 * list adds a short id and when it paired. */
export async function deviceName() {
  let model = "";
  let platform = "";
  let version = "";
  try {
    if (navigator.userAgentData && navigator.userAgentData.getHighEntropyValues) {
      const values = await navigator.userAgentData.getHighEntropyValues(["model", "platform", "platformVersion"]);
      model = values.model || "";
      platform = values.platform || "";
      version = values.platformVersion || "";
    }
  } catch {
    model = "";
  }
  const ua = navigator.userAgent || "";
  if (!model) {
    const android = /Android [^;)]*;\s*([^;)]+?)(?:\s+Build\/[^;)]*)?\)/.exec(ua);
    if (android && android[1] !== "K") model = android[1];
    else if (/iPhone/.test(ua)) model = "iPhone";
    else if (/iPad/.test(ua)) model = "iPad";
    else if (/Android/.test(ua)) model = "Android phone";
    else if (platform) model = platform;
    else if (/Mac OS X/.test(ua)) model = "Mac";
    else if (/Windows/.test(ua)) model = "Windows";
    else if (/Linux/.test(ua)) model = "Linux";
  }
  let system = "";
  const ios = /(?:iPhone|CPU) OS (\d+)[_.](\d+)/.exec(ua);
  const android = /Android (\d+(?:\.\d+)?)/.exec(ua);
  if (ios) system = "iOS " + ios[1] + "." + ios[2];
  else if (android) system = "Android " + android[1];
  else if (platform && version && platform !== model) system = platform + " " + version.split(".")[0];
  const browser = /Firefox\/|FxiOS\//.test(ua) ? "Firefox" : /Edg[A]?\//.test(ua) ? "Edge" : /Chrome\/|CriOS\//.test(ua) ? "Chrome" : /Safari\//.test(ua) ? "Safari" : "Browser";
  return (browser + " on " + (model || "an unknown device") + (system ? " (" + system + ")" : "")).slice(0, 64);
}

/** POSTs JSON; with `proof`, a DPoP proof of this page's key goes with it (the key is made if there is none). */
async function post(path, body, proof) {
  const init = {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body), cache: "no-store",
    credentials: "omit", referrerPolicy: "no-referrer",
  };
  const response = proof ? await dpop.fetchWithProof(path, init) : await fetch(path, init);
  let json = null;
  try {
    json = await response.json();
  } catch {
    json = null;
  }
  return { status: response.status, json: json || {} };
}

function tokensFrom(json) {
  const now = Date.now();
  // The lifetime comes from expires_in (seconds), so a phone whose clock is off still refreshes in time.
  const lifetime = Number(json.expires_in) > 0 ? Number(json.expires_in) * 1000 : Date.parse(json.access_token_expires_at) - now;
  return {
    access: json.access_token,
    accessExp: now + lifetime,
    refresh: json.refresh_token,
    refreshExp: Date.parse(json.refresh_token_expires_at) || now + 30 * 86400_000,
    deviceId: json.device_id,
    // "DPoP": bound to this page's key, every use carries a proof; "Bearer": unbound (DPoP off, or no WebCrypto here).
    type: json.token_type === "DPoP" ? "DPoP" : "Bearer",
  };
}

/** Exchanges the pairing token: `{tokens}` when paired, `{pending: deviceId}` while the desktop has not approved. */
export async function exchange(pairingToken, name, deviceId) {
  const body = { pairing_token: pairingToken, device_name: name };
  if (deviceId) body.device_id = deviceId;
  // Bound to this origin's key when the page can hold one (a key that cannot be made leaves the pairing unbound).
  let bind = dpop.available();
  if (bind) {
    try {
      await dpop.ensureKey();
    } catch (error) {
      console.warn("oa-bridge: no DPoP key (" + String(error && error.message).slice(0, 100) + "); pairing unbound");
      bind = false;
    }
  }
  const { status, json } = await post("/api/auth/exchange", body, bind);
  if (status === 200) return { tokens: tokensFrom(json), bridge: json.bridge && typeof json.bridge === "object" ? json.bridge : null };
  if (status === 202) return { pending: json.device_id };
  throw new AuthError(status, json.error, json.message);
}

/** Makes sure the stored access token is fresh, refreshing it (once across all tabs) when it is about to expire or
 * when `stale` (an access token the bridge refused) is still the stored one. Returns the current tokens. */
export async function fresh(stale) {
  let waited = false;
  const run = async () => {
    let state = load();
    if (!state || !state.tokens) throw new AuthError(401, "not_paired", "not paired");
    if (waited && isDue(state.tokens, stale)) {
      // Another tab held the lock: it may have just refreshed, and its localStorage write can reach this tab's
      // process a moment after the lock does. Presenting the old refresh token again would revoke the device.
      await storageChange(1_500);
      state = load();
      if (!state || !state.tokens) throw new AuthError(401, "not_paired", "not paired");
    }
    const tokens = state.tokens;
    if (!isDue(tokens, stale)) return tokens;
    const { status, json } = await post("/api/auth/refresh", { refresh_token: tokens.refresh }, tokens.type === "DPoP");
    if (status === 200) {
      const next = tokensFrom(json);
      const latest = load() || state;
      latest.tokens = next;
      save(latest);
      return next;
    }
    throw new AuthError(status, json.error, json.message);
  };
  if (navigator.locks && navigator.locks.request) {
    const busy = {};
    const result = await navigator.locks.request("oa-bridge-refresh", { ifAvailable: true }, (lock) => (lock ? run() : busy));
    if (result !== busy) return result;
    waited = true;
    return navigator.locks.request("oa-bridge-refresh", run);
  }
  return run();
}

/** Whether `tokens` must be refreshed: the access token expires soon, or it is the one the bridge refused. */
function isDue(tokens, stale) {
  return tokens.accessExp - Date.now() < REFRESH_MARGIN_MS || tokens.access === stale;
}

/** Resolves when another tab changes the stored state, or after `ms`. */
function storageChange(ms) {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      window.removeEventListener("storage", onStorage);
      resolve();
    };
    const onStorage = (event) => {
      if (event.key === KEY) done();
    };
    const timer = setTimeout(done, ms);
    window.addEventListener("storage", onStorage);
  });
}

/** fetch() of an `/api` route with the access token of `tokens`: `Authorization: DPoP` and a proof for a bound family,
 * `Authorization: Bearer` otherwise. */
export function apiFetch(path, init, tokens) {
  if (tokens.type === "DPoP") return dpop.fetchWithProof(path, init, tokens.access);
  return fetch(path, { ...init, headers: { ...((init && init.headers) || {}), Authorization: "Bearer " + tokens.access } });
}

/** The stored tokens if `access` is their access token and they are bound, else null. */
function boundTokens(access) {
  const state = load();
  const tokens = state && state.tokens;
  return tokens && tokens.access === access && tokens.type === "DPoP" ? tokens : null;
}

/** For the WebSocket upgrade, which a browser cannot give headers: the proof for `url` (htm GET, ath of `access`)
 * that goes in `&dpop=`, with a nonce asked first when the kept one is old; null for an unbound token. */
export async function upgradeProof(url, access) {
  if (!boundTokens(access)) return null;
  await dpop.freshNonce();
  return dpop.proof("GET", url, access);
}

/** For the Streamable HTTP fallback: a fetch() that sends `access` as DPoP with a proof per request (and retries once
 * with the bridge's nonce); null for an unbound token (then the transport sends it as Bearer). */
export function httpFetcher(access) {
  if (!boundTokens(access)) return null;
  return (url, init) => {
    const headers = { ...((init && init.headers) || {}) };
    delete headers.Authorization;
    return dpop.fetchWithProof(url, { ...init, headers }, access);
  };
}

/** A WebSocket that did not open: the bridge may have restarted, and its nonces with it. */
export function nonceStale() {
  dpop.nonceStale();
}
