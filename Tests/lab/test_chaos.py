"""Issue 25 item 8: the chaos test, CI's 3-minute version (1.75 min of chaos; chaos_run.py has the harness and what is
checked; the long run is `scripts/bench chaos --minutes N`).

Three phones (the web app in Chromium, `oa-bridge connect`, the official ACP Python SDK) on one session of fast-agent
(offline model `passthrough`) behind `oa-bridge serve` on the lab's desk, while a seeded random driver breaks things;
at the end no prompt was lost or run twice, every phone got the session's updates once and in order, nothing is
left behind, and the bridge's descriptors and memory are back. The seed is printed; rerun one with
OA_CHAOS_SEED=N (and OA_CHAOS_MINUTES=M).

CI's version has every action of the long run: `kill -9` of the agent (and once or more of an agent whose next start
cannot load sessions: the honest-gap path, the kept conversation shown read-only and connect going on in a new
session), restarts of the bridge (SIGTERM: stopped within 2.5 s; SIGKILL: the store may lose its newest updates, and
the phones are told, the numbering never reused), restarts of the desk's avahi-daemon and D-Bus, link drops of every
host (the desk's too) and blackhole routes on every phone; the SDK phone resends a prompt whose fate it could not
learn with its idempotency key (the bridge honours it, issue 25.3). The findings that kept bridge restarts out of CI
before (F5, F5b, F7, F8) are fixed: Tests/system/test_restart_stops.py, test_restart_sessions.py's kill -9 test and
test_connect_agent_restart.py show each.

Under tokens and DPoP (issue 30): serve runs `--auth token --dpop optional` (`--allow-plaintext` for the SDK phone's
ws://); connect pairs with `--pair` (the payload `oa-bridge pair --json` prints) and its token family is bound to its
key across every bridge restart (SIGTERM and SIGKILL: the restarted bridge's nonces are new, so its first proof is
answered use_dpop_nonce and tried again); the web app pairs with the link's code (its key in IndexedDB: bound too),
the SDK phone (no key) unbound with a Bearer token. At the end no phone had to pair again or was revoked, and
connect's saved access token, copied out of its files, is refused as Bearer (401 invalid_token).
"""

from __future__ import annotations

import json
import os

import pytest

from chaos_run import FAST_AGENT, ChaosRun

CI_ACTIONS = ("agent_kill", "agent_kill_noload", "bridge_restart", "avahi_restart", "dbus_restart", "link_drop", "blackhole")
CI_LINK_TARGETS = ("webphone", "cliphone", "sdkphone", "desk")


def test_three_phones_on_one_session_lose_nothing_through_chaos(lab, desk, bridge_bin, timings):
    if not FAST_AGENT.exists():
        pytest.skip(f"no fast-agent-acp at {FAST_AGENT}: Tests/system/test_acp_thirdparty.py installs it (run first)")
    # 1.75 min of chaos: with setup (lab hosts, the agent's first start, Chromium), the settling round after the last
    # restart and the checks, the test takes about 3 min (CI is near its 30 minutes).
    minutes = float(os.environ.get("OA_CHAOS_MINUTES", "1.75"))
    seed = int(os.environ["OA_CHAOS_SEED"]) if os.environ.get("OA_CHAOS_SEED") else None
    run = ChaosRun(lab, bridge_bin, minutes, seed, actions=CI_ACTIONS, link_targets=CI_LINK_TARGETS, keyed_retry=True,
                   quiet_after_agent_kill_s=0.0, dpop=os.environ.get("OA_CHAOS_DPOP", "1") != "0",
                   log=lambda line: print(line, flush=True))
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
    # The descriptors and memory were compared with the same bridge process's figures after the warm-up.
    assert figures["bridge_figures_compared"], figures.get("bridge_baseline")
    # DPoP (OA_CHAOS_DPOP=0: --auth none, as before): connect's family stayed bound through the restarts, and no
    # phone paired again (check_dpop's problems).
    if figures["dpop"]:
        assert figures["devices_end"], figures.get("devices_end")
        assert figures["dpop_copied_token_as_bearer"] == "401", figures.get("dpop_copied_token_as_bearer")
