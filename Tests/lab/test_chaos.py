"""Issue 25 item 8: the chaos test, CI's 3-minute version (2.75 min of chaos; chaos_run.py has the harness and what is
checked; the long run is `scripts/bench chaos --minutes N`).

Three phones (the web app in Chromium, `oa-bridge connect`, the official ACP Python SDK) on one session of fast-agent
(offline model `passthrough`) behind `oa-bridge serve` on the lab's desk, while a seeded random driver breaks things;
at the end no prompt was lost or run twice, every phone got the session's updates once and in order, nothing is
left behind, and the bridge's descriptors and memory are back. The seed is printed; rerun one with
OA_CHAOS_SEED=N (and OA_CHAOS_MINUTES=M).

What CI's version leaves out, and why (each is a finding of the chaos run, reproduced in /tmp/chaos-findings.md and
the report of issue 25 item 8; put it back here when it is fixed):
- `kill -9` of the agent: `connect` exits on the next prompt ("Unknown session … (-32002)", or "-32602 … not attached
  to this connection" when another phone loaded the session first), and a phone that resumes after another one
  loaded the session again skips updates (the bridge numbers the reloaded session from 1 and accepts a `lastSeq`
  beyond its latest).
- link drops and blackholes of connect's host and of the desk (which cut connect too): a reconnect mid-prompt before
  the prompt's first update resumes "after update 0", so connect prints the whole session again, and a prompt that
  never reached the bridge is reported "unknown" (connect's side of issue 25.3, not landed).
- restarts of the bridge: the sessions do not survive one yet (issue 25.2, not landed).
In: avahi-daemon and D-Bus restarts on the desk, link drops and blackhole routes of the web app's and the SDK's
phones, with connect, the web app and the SDK prompting throughout."""

from __future__ import annotations

import json
import os

import pytest

from chaos_run import FAST_AGENT, ChaosRun

CI_ACTIONS = ("avahi_restart", "dbus_restart", "link_drop", "blackhole")
CI_LINK_TARGETS = ("webphone", "sdkphone")


def test_three_phones_on_one_session_lose_nothing_through_chaos(lab, desk, bridge_bin, timings):
    if not FAST_AGENT.exists():
        pytest.skip(f"no fast-agent-acp at {FAST_AGENT}: Tests/system/test_acp_thirdparty.py installs it (run first)")
    # 2.75 min of chaos: with setup, the settling round and the checks the test takes about 3 min 10 s (CI allows 3.5).
    minutes = float(os.environ.get("OA_CHAOS_MINUTES", "2.75"))
    seed = int(os.environ["OA_CHAOS_SEED"]) if os.environ.get("OA_CHAOS_SEED") else None
    run = ChaosRun(lab, bridge_bin, minutes, seed, actions=CI_ACTIONS, link_targets=CI_LINK_TARGETS,
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
