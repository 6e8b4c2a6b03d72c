// Unpair: the desktop revokes this phone, then the phone forgets everything, reached or not.

import * as auth from "./auth.js";
import { $, sleep } from "./dom.js";
import { RPCError } from "./rpc.js";
import { unpaired } from "./screens.js";

export function resetUnpair(app) {
  $("unpair-confirm").hidden = true;
  $("unpair").hidden = false;
}

/** The user unpairs this phone: the desktop revokes it (`_oa/logout` on the live connection, else
 * `POST /api/logout`), then the phone forgets every stored secret and conversation, reached or not. */
export async function unpairNow(app) {
  $("sessions").close();
  app.unpairing = true;
  const state = auth.load();
  let reached = !(state && state.tokens); // nothing to revoke without tokens
  if (!reached && app.conn && app.conn.ready) {
    try {
      await Promise.race([app.conn.call("_oa/logout", {}), sleep(5_000).then(() => { throw new Error("timeout"); })]);
      reached = true;
    } catch (error) {
      reached = error instanceof RPCError; // the bridge answered (auth off: -32005): nothing left to revoke there
    }
  }
  if (!reached) {
    try {
      const tokens = await auth.fresh();
      const response = await auth.apiFetch("/api/logout", { method: "POST", cache: "no-store", credentials: "omit" }, tokens);
      reached = response.ok || response.status === 401 || response.status === 403;
    } catch (error) {
      reached = error instanceof auth.AuthError && error.unpaired; // already revoked
    }
  }
  unpaired(app, reached ? "user" : "local");
  app.unpairing = false;
}

/** The Unpair button, its confirmation and its cancel (closing the Sessions dialog cancels too). */
export function installUnpair(app) {
  $("unpair").addEventListener("click", () => {
    $("unpair-confirm").hidden = false;
    $("unpair").hidden = true;
    $("unpair-no").focus();
  });
  $("unpair-no").addEventListener("click", () => resetUnpair(app));
  $("sessions").addEventListener("close", () => resetUnpair(app));
  $("unpair-yes").addEventListener("click", () => unpairNow(app));
}
