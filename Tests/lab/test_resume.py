"""Resume without loss across a cut link (issue 5): the phone's link is cut for a few seconds during
a streaming prompt; `oa-bridge connect` notices (keepalive), reconnects with backoff, resumes the
session, and ends with every update exactly once, in order, and the turn's stop reason."""

from __future__ import annotations

import json
import time

from lab_support import wait_resolved


def test_cut_link_during_streaming_prompt_loses_nothing(lab, desk, phone, bridge_bin, timings):
    serve = desk.spawn([bridge_bin, "serve", "--name", "Desk", "--auth", "none", "--allow-network", "198.18.0.0/15"],
                       label="serve-resume")
    try:
        wait_resolved(phone, "Desk", timeout=15, guard=serve)
        words = " ".join(f"w{i}" for i in range(300))  # ~300 chunks, 20 ms apart: about 6 s of streaming
        client = phone.spawn([bridge_bin, "connect", "Desk", "--json", "--keepalive", "1", "--yes", "--prompt", words],
                             label="connect-resume")
        assert client.wait_for_line(lambda line: '"seq":40' in line, timeout=15), client.describe()
        cut = time.monotonic()
        phone.link_down()
        time.sleep(4)
        phone.link_up()
        rc = client.wait(60)
        assert rc == 0, client.describe()
        lines = [json.loads(line) for line in client.stdout().splitlines() if line.startswith("{") and "sessionUpdate" in line]
        seqs = [line["seq"] for line in lines]
        assert seqs == list(range(1, len(seqs) + 1)), f"updates missing, repeated or out of order: {seqs[:20]}…"
        text = "".join(line.get("text", "") for line in lines if line["sessionUpdate"] == "agent_message_chunk")
        assert text.startswith("You said: w0 w1") and " w299" in text, text[-200:]
        err = client.stderr()
        assert "[reconnected; resuming after update" in err, err[-2000:]
        assert "[stop] end_turn" in err, err[-2000:]
        timings.record("resume_total_after_cut", (time.monotonic() - cut) * 1000, updates=len(seqs))
        print(f"\n[resume] {len(seqs)} updates exactly once, in order, across a 4 s cut")
    finally:
        serve.stop()
