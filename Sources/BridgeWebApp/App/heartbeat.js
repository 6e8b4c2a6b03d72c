// The application heartbeat (issue 25.3): a browser cannot see WebSocket pings, and a dead link (a blackholed route,
// a stopped bridge) keeps its TCP connection "open" for minutes. Every PING_INTERVAL_MS the app asks the bridge
// `_oa/ping` (after PING_INTERVAL_MS without hearing anything); any answer (an error answer too) or any other message
// proves the link alive. When a ping has waited DEAD_AFTER_MS with nothing heard since it was sent, the link is
// declared dead: at most PING_INTERVAL_MS + DEAD_AFTER_MS (+1 s) after it died.

/** How often to ask. */
export const PING_INTERVAL_MS = 5_000;
/** How long a ping may wait for an answer (with nothing else heard) before the link is dead. */
export const DEAD_AFTER_MS = 10_000;
/** How often the heartbeat looks at the clock. */
const TICK_MS = 1_000;

export class Heartbeat {
  /**
   * @param {() => Promise<unknown>} ping sends `_oa/ping` and settles with its answer
   * @param {() => void} dead called once when the link is declared dead (the heartbeat has stopped then)
   */
  constructor(ping, dead) {
    this.ping = ping;
    this.dead = dead;
    this.timer = 0;
    this.heard = 0;
    this.sent = 0;
    this.waiting = false;
  }

  /** Starts watching a link that was just opened. */
  start() {
    this.stop();
    this.heard = Date.now();
    this.sent = 0;
    this.waiting = false;
    this.timer = setInterval(() => this.tick(), TICK_MS);
  }

  stop() {
    clearInterval(this.timer);
    this.timer = 0;
  }

  /** Anything received from the bridge. */
  alive() {
    this.heard = Date.now();
    this.waiting = false;
  }

  /** Pings now (before something that must not go into a dead link); the returned promise settles with the answer.
   * A ping already waiting keeps its time: the link is dead DEAD_AFTER_MS after the first unanswered one. */
  probe() {
    if (!this.waiting) {
      this.waiting = true;
      this.sent = Date.now();
    }
    return this.ping();
  }

  tick() {
    const now = Date.now();
    if (this.waiting && now - this.sent >= DEAD_AFTER_MS) {
      this.stop();
      this.dead();
      return;
    }
    if (!this.waiting && now - Math.max(this.heard, this.sent) >= PING_INTERVAL_MS) {
      // The answer is also "heard" (Connection.receive); a lost connection is seen by its close.
      this.probe().catch(() => {});
    }
  }
}
