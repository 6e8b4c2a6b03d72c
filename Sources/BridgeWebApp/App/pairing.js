// What a pairing link (the QR code's URL, `/app#<payload>`) may do to what this phone already holds (issue 27.6).
// Any page, or a link in an agent's answer, can open such a link: it must never replace or wipe a pairing by itself.

/**
 * Decides what to do with the link's `payload` given the stored auth `state` (auth.load()):
 * - "pair": pair with `payload.token` (nothing to lose: no stored tokens);
 * - "confirm": the phone is paired and the link holds a new pairing code: ask the user before replacing;
 * - "keep": ignore the link, keep what is stored (a link without a pairing code never touches a pairing);
 * - "noauth": a bridge without auth (`--auth none`) on a phone that holds nothing: remember that.
 */
export function decide(payload, state) {
  const token = payload && typeof payload.token === "string" && payload.token ? payload.token : null;
  const paired = !!(state && state.tokens);
  if (token) {
    if (!paired) return "pair";
    return "confirm";
  }
  if (state && (state.tokens || state.pending || state.noAuth)) return "keep";
  return "noauth";
}
