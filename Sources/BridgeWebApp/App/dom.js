// Small helpers every part of the page uses: an element by id, a value as a string only when it is one (what the
// bridge or the agent sends is never trusted to have the type it should), and a pause.

/** The element with `id`. */
export const $ = (id) => document.getElementById(id);

/** `value` when it is a string, else "". */
export function str(value) {
  return typeof value === "string" ? value : "";
}

/** A promise settled after `ms` milliseconds. */
export function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
