"""permessage-deflate on the wire (issue 32 goal 5), with measure.py's raw-socket phone against `oa-bridge serve` and
the recorded agent answer (replay_agent.py): offered as Chromium offers it, the bridge accepts (asking
`client_no_context_takeover`) and the answer takes at least 4x fewer bytes than uncompressed; `--no-compression`
declines the same offer; a phone that offers nothing gets plain frames. Byte counts only: speed lives in
`scripts/bench --sections deflate`.
"""
import measure


def test_a_recorded_answer_takes_at_least_4x_fewer_bytes_and_no_compression_declines() -> None:
    on = measure.Serve("--auth", "none", "--log-level", "error", "--agent", measure.AGENT, prefix="oa-deflate-on-")
    off = measure.Serve("--auth", "none", "--log-level", "error", "--agent", measure.AGENT, "--no-compression",
                        prefix="oa-deflate-off-")
    try:
        compressed = measure.answer_bytes(on, measure.CHROMIUM_OFFER, 3)
        declined = measure.answer_bytes(off, measure.CHROMIUM_OFFER, 3)
        plain = measure.answer_bytes(on, None, 3)
    finally:
        on.stop()
        off.stop()
    assert compressed["extensions"] == ["permessage-deflate; client_no_context_takeover"], compressed
    assert compressed["compressed_messages"] >= 3 * (measure.UPDATES_PER_ANSWER - 5), compressed
    assert declined["extensions"] == [] and declined["compressed_messages"] == 0, declined
    assert plain["extensions"] == [] and plain["compressed_messages"] == 0, plain
    assert plain["bytes_per_answer"] >= 4 * compressed["bytes_per_answer"], (plain, compressed)
    assert declined["bytes_per_answer"] == plain["bytes_per_answer"], (declined, plain)
