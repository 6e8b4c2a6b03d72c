// DPoP (RFC 9449, issue 30): the phone's own key, and a fresh proof with every use of a token. A token copied out of
// this page's localStorage is of no use without the key, and the key never leaves WebCrypto: it is made
// non-extractable (crypto.subtle.exportKey refuses it) and kept, as a CryptoKey object, in IndexedDB (db
// "oa-bridge-dpop"), one per bridge origin. A proof is an ES256 JWS with typ dpop+jwt, the public jwk, htm, htu
// (the URL without query and fragment; https:// or http://, also for the WebSocket upgrade), iat, a random jti, ath
// (the SHA-256 of the access token) where one is presented, and the bridge's last DPoP-Nonce.

const DB = "oa-bridge-dpop";
const STORE = "keys";
/** A nonce older than this is asked again before a WebSocket upgrade, whose refusal the page cannot read. */
const NONCE_MAX_AGE_MS = 60_000;

let keyPromise = null; // the origin's {privateKey, jwk}, once loaded or made
let queue = Promise.resolve(); // IndexedDB work, one after another (a forget before a new key stays before it)
let nonce = null; // the bridge's last DPoP-Nonce
let nonceAt = 0;
let clockOffset = 0; // the bridge's clock minus this phone's, when they differ by more than CLOCK_SLACK_MS
/** A phone clock this far off the bridge's (its Date header) is corrected in iat: the bridge takes 60 s at most. */
const CLOCK_SLACK_MS = 15_000;

/** Whether this page can hold a key: WebCrypto (secure contexts only: https://, or http:// on loopback) and
 * IndexedDB. Without them the app pairs unbound, as before DPoP. */
export function available() {
  return !!(globalThis.crypto && crypto.subtle && globalThis.indexedDB);
}

function serial(work) {
  const run = queue.then(work, work);
  queue = run.catch(() => {});
  return run;
}

function request(req) {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

async function database() {
  const open = indexedDB.open(DB, 1);
  open.onupgradeneeded = () => open.result.createObjectStore(STORE);
  return request(open);
}

async function withStore(mode, work) {
  const db = await database();
  try {
    const tx = db.transaction(STORE, mode);
    const done = new Promise((resolve, reject) => {
      tx.oncomplete = resolve;
      tx.onerror = () => reject(tx.error);
      tx.onabort = () => reject(tx.error);
    });
    const result = await request(work(tx.objectStore(STORE)));
    await done;
    return result;
  } finally {
    db.close();
  }
}

async function publicJwk(publicKey) {
  const full = await crypto.subtle.exportKey("jwk", publicKey);
  return { kty: full.kty, crv: full.crv, x: full.x, y: full.y };
}

/** This origin's key, made now (non-extractable P-256) when there is none. Resolves to {privateKey, jwk}. */
export function ensureKey() {
  if (!keyPromise) {
    keyPromise = serial(async () => {
      let stored = await withStore("readonly", (store) => store.get(location.origin));
      if (!stored || !stored.privateKey || !stored.publicKey) {
        const pair = await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, false, ["sign", "verify"]);
        stored = { privateKey: pair.privateKey, publicKey: pair.publicKey, created: Date.now() };
        await withStore("readwrite", (store) => store.put(stored, location.origin));
      }
      return { privateKey: stored.privateKey, jwk: await publicJwk(stored.publicKey) };
    });
    keyPromise.catch(() => {
      keyPromise = null;
    });
  }
  return keyPromise;
}

/** Forgets this origin's key (with the pairing: the next pairing makes a new one). */
export function forgetKey() {
  keyPromise = null;
  nonce = null;
  if (!available()) return Promise.resolve();
  return serial(() => withStore("readwrite", (store) => store.delete(location.origin))).catch(() => {});
}

function base64url(bytes) {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function text64(value) {
  return base64url(new TextEncoder().encode(JSON.stringify(value)));
}

/** base64url(SHA-256(token)), the proof's ath. */
async function accessTokenHash(token) {
  return base64url(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(token))));
}

/** The URL a proof names: absolute, without query and fragment; ws:/wss: written as http:/https:. */
export function targetURI(url) {
  const parsed = new URL(url, location.href);
  const scheme = parsed.protocol === "wss:" ? "https:" : parsed.protocol === "ws:" ? "http:" : parsed.protocol;
  return scheme + "//" + parsed.host + parsed.pathname;
}

/** A proof for `method` on `url`, with ath for `accessToken` when given, signed by this origin's key. */
export async function proof(method, url, accessToken) {
  const key = await ensureKey();
  const header = { typ: "dpop+jwt", alg: "ES256", jwk: key.jwk };
  const jti = base64url(crypto.getRandomValues(new Uint8Array(16)));
  const claims = { htm: method.toUpperCase(), htu: targetURI(url), iat: Math.floor((Date.now() + clockOffset) / 1000), jti };
  if (accessToken) claims.ath = await accessTokenHash(accessToken);
  if (nonce) claims.nonce = nonce;
  const input = text64(header) + "." + text64(claims);
  const signature = await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, key.privateKey, new TextEncoder().encode(input));
  return input + "." + base64url(new Uint8Array(signature));
}

/** Keeps the bridge's DPoP-Nonce from an answer, if it has one, and how far this phone's clock is off the bridge's
 * (its Date header). Returns whether the clock correction changed. */
export function noteNonce(response) {
  const value = response && response.headers ? response.headers.get("DPoP-Nonce") : null;
  if (value) {
    nonce = value;
    nonceAt = Date.now();
  }
  const date = response && response.headers ? Date.parse(response.headers.get("Date") || "") : NaN;
  if (!Number.isFinite(date)) return false;
  const offset = date - Date.now();
  const next = Math.abs(offset) > CLOCK_SLACK_MS ? offset : 0;
  const changed = Math.abs(next - clockOffset) > CLOCK_SLACK_MS;
  clockOffset = next;
  return changed;
}

/** The kept nonce may be stale (a WebSocket that did not open: the bridge may have restarted with new nonces). */
export function nonceStale() {
  nonceAt = 0;
}

/** Whether an answer asks for a proof with the bridge's nonce (RFC 9449 §8: 400 with error use_dpop_nonce at the
 * token endpoints, 401 with WWW-Authenticate: DPoP error="use_dpop_nonce" elsewhere). */
async function wantsNonce(response) {
  if (!response.headers.get("DPoP-Nonce")) return false;
  if (response.status === 401) return /error="use_dpop_nonce"/.test(response.headers.get("WWW-Authenticate") || "");
  if (response.status !== 400) return false;
  const body = await response.clone().json().catch(() => null);
  return !!(body && body.error === "use_dpop_nonce");
}

/**
 * fetch() with a proof: `DPoP: <proof>` (and `Authorization: DPoP <accessToken>` when one is given); retried once
 * with the bridge's nonce when it answers use_dpop_nonce. Every answer's DPoP-Nonce is kept.
 */
export async function fetchWithProof(url, init, accessToken) {
  const method = (init && init.method) || "GET";
  for (let attempt = 0; ; attempt++) {
    const headers = new Headers((init && init.headers) || {});
    headers.set("DPoP", await proof(method, url, accessToken));
    if (accessToken) headers.set("Authorization", "DPoP " + accessToken);
    const response = await fetch(url, { ...init, headers });
    const skewed = noteNonce(response) && (response.status === 400 || response.status === 401);
    if (attempt === 0 && (skewed || (await wantsNonce(response)))) continue;
    return response;
  }
}

/** A nonce fresh enough for a WebSocket upgrade (asked with GET /api/health when the kept one is old). */
export async function freshNonce() {
  if (nonce && Date.now() - nonceAt < NONCE_MAX_AGE_MS) return nonce;
  try {
    noteNonce(await fetch("/api/health", { cache: "no-store", credentials: "omit" }));
  } catch {
    // the bridge is away: the upgrade fails anyway, and the next attempt asks again
  }
  return nonce;
}
