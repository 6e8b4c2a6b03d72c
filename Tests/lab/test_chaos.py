"""Issue 25 item 8: the chaos test, CI's 3-minute version (2.25 min of chaos; chaos_run.py has the harness and what is
checked; the long run is `scripts/bench chaos --minutes N`).

Three phones (the web app in Chromium, `oa-bridge connect`, the official ACP Python SDK) on one session of fast-agent
(offline model `passthrough`) behind `oa-bridge serve` on the lab's desk, while a seeded random driver breaks things;
at the end no prompt was lost or run twice, every phone got the session's updates once and in order, nothing is
left behind, and the bridge's descriptors and memory are back. The seed is printed; rerun one with
OA_CHAOS_SEED=N (and OA_CHAOS_MINUTES=M).

CI's version has every action of the long run: `kill -9` of the agent, restarts of the desk's avahi-daemon and D-Bus,
link drops of every host, blackhole routes on every phone, and restarts of the bridge; the SDK phone resends a prompt
whose fate it could not learn with its idempotency key (the bridge honours it, issue 25.3). Two open findings narrow
the bridge restarts, and only those (the long run, `scripts/bench chaos`, has neither limit):
- only by SIGTERM, not SIGKILL: a crash loses the session's latest updates from the store and the restored session
  numbers the next ones again, so a phone resuming after what it saw skips them (finding F7 of the chaos report);
- not within 10 s of a `kill -9` of the agent: serve ignores a SIGTERM that comes while it restarts the agent
  (finding F5).
Put them back (bridge_signals, quiet_after_agent_kill_s) when those are fixed.
"""

from __future__ import annotations

import json
import os

import pytest

from chaos_run import FAST_AGENT, ChaosRun

CI_ACTIONS = ("agent_kill", "avahi_restart", "dbus_restart", "link_drop", "blackhole", "bridge_restart")
CI_LINK_TARGETS = ("webphone", "cliphone", "sdkphone", "desk")


def test_three_phones_on_one_session_lose_nothing_through_chaos(lab, desk, bridge_bin, timings):
    if not FAST_AGENT.exists():
        pytest.skip(f"no fast-agent-acp at {FAST_AGENT}: Tests/system/test_acp_thirdparty.py installs it (run first)")
    # 2.25 min of chaos: with setup (lab hosts, the agent's first start, Chromium), the settling round after the last
    # restart and the checks, the test takes about 3 min 15 s (CI allows 3.5).
    minutes = float(os.environ.get("OA_CHAOS_MINUTES", "2.25"))
    seed = int(os.environ["OA_CHAOS_SEED"]) if os.environ.get("OA_CHAOS_SEED") else None
    run = ChaosRun(lab, bridge_bin, minutes, seed, actions=CI_ACTIONS, link_targets=CI_LINK_TARGETS, keyed_retry=True,
                   bridge_signals=("TERM",), quiet_after_agent_kill_s=10.0, log=lambda line: print(line, flush=True))
    print(f"\n[chaos] seed {run.seed} (rerun: OA_CHAOS_SEED={run.seed})")
    try:
        figures = run.run()
    finally:
        for name in ("webphone", "cliphone", "sdkphone"):
            if name in lab.hosts:
                lab.remove_host(name)
    print("[chaos] " + json.dumps({k: v for k, v in figures.items() if k not in ("problems", "findings")}))
    timings.record("chaos_prompt_max", figures["prompt_seconds_max"] * 1000, seed=run.seed, prompts=figures["prompts"])
    assert not figures["problems"], f"seed {run.seed}: " + "\n".join(figures["problems"]) + f"\n(files in {run.dir})"
    assert not figures["findings"], f"seed {run.seed}: " + "\n".join(figures["findings"]) + f"\n(files in {run.dir})"
    # The run did what it says: every kind of action happened, and prompts kept being answered throughout.
    assert set(figures["actions"]) == set(CI_ACTIONS), figures["actions"]
    assert figures["outcomes"].get("done", 0) >= 30, figures["outcomes"]
    # The descriptors and memory were compared with the same bridge process's (after a restart: the new one's).
    assert figures["bridge_figures_compared"], figures.get("bridge_baseline")
