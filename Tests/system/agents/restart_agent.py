"""An ACP agent written with the official Python SDK (`agent-client-protocol`) that keeps its sessions on disk, for the
restart tests (Tests/system/test_restart_*.py, Tests/web/test_webapp_restart.py).

`RESTART_AGENT_DIR` is where it keeps them (one JSON file per session: its cwd and history) and a log of every
request it got (`requests.jsonl`: method, session, prompt text). `RESTART_AGENT_LOAD=0` makes it an agent that cannot
load sessions (no `loadSession`, no `sessionCapabilities.resume`), as many agents are; by default it loads them,
replaying the history as `session/update` before it answers, as ACP says.

Prompts: `slow N` streams N chunks `cN ` 50 ms apart, then `done`; anything else is answered `heard: <text>`.
"""
import asyncio
import json
import os
import uuid
from pathlib import Path

from acp import PROTOCOL_VERSION, RequestError, run_agent, update_agent_message_text, update_user_message_text
from acp.schema import (AgentCapabilities, Implementation, InitializeResponse, LoadSessionResponse, NewSessionResponse,
                        PromptResponse, ResumeSessionResponse, SessionCapabilities)

STATE = Path(os.environ["RESTART_AGENT_DIR"])
LOADS = os.environ.get("RESTART_AGENT_LOAD", "1") != "0"


def log(**entry):
    with open(STATE / "requests.jsonl", "a") as file:
        file.write(json.dumps(entry) + "\n")


def session_file(session_id):
    return STATE / ("session-" + "".join(c for c in session_id if c.isalnum() or c == "-") + ".json")


def read(session_id):
    try:
        return json.loads(session_file(session_id).read_text())
    except (OSError, ValueError):
        return None


def write(session_id, record):
    path = session_file(session_id)
    path.with_suffix(".tmp").write_text(json.dumps(record))
    path.with_suffix(".tmp").replace(path)


class RestartAgent:
    def on_connect(self, conn):
        self.conn = conn
        self.cancelled = set()

    async def initialize(self, protocol_version, client_capabilities=None, client_info=None, **kwargs):
        log(method="initialize")
        capabilities = AgentCapabilities(load_session=True, session_capabilities=SessionCapabilities.model_validate({"resume": {}})) \
            if LOADS else AgentCapabilities()
        return InitializeResponse(protocol_version=PROTOCOL_VERSION, agent_capabilities=capabilities,
                                  agent_info=Implementation(name="restart-agent", title="Restart test agent", version="1.0"))

    async def new_session(self, cwd, mcp_servers=None, **kwargs):
        session_id = "r-" + uuid.uuid4().hex[:12]
        write(session_id, {"cwd": cwd, "history": []})
        log(method="session/new", session=session_id)
        return NewSessionResponse(session_id=session_id)

    async def load_session(self, cwd, session_id, mcp_servers=None, **kwargs):
        log(method="session/load", session=session_id)
        record = read(session_id) if LOADS else None
        if record is None:
            raise RequestError.resource_not_found(session_id)
        for role, text in record["history"]:
            update = update_user_message_text(text) if role == "user" else update_agent_message_text(text)
            await self.conn.session_update(session_id, update)
        return LoadSessionResponse()

    async def resume_session(self, session_id, cwd, mcp_servers=None, **kwargs):
        log(method="session/resume", session=session_id)
        if not LOADS or read(session_id) is None:
            raise RequestError.resource_not_found(session_id)
        return ResumeSessionResponse()

    async def cancel(self, session_id, **kwargs):
        self.cancelled.add(session_id)

    async def prompt(self, session_id, prompt, **kwargs):
        text = " ".join(getattr(block, "text", "") or "" for block in prompt)
        log(method="session/prompt", session=session_id, text=text, meta=kwargs.get("field_meta"))
        record = read(session_id)
        if record is None:
            raise RequestError.resource_not_found(session_id)
        self.cancelled.discard(session_id)
        record["history"].append(["user", text])
        words = text.split(" ")
        if words[0] == "slow" and len(words) > 1 and words[1].isdigit():
            for n in range(1, int(words[1]) + 1):
                if session_id in self.cancelled:
                    return PromptResponse(stop_reason="cancelled")
                await self.conn.session_update(session_id, update_agent_message_text("c%d " % n))
                record["history"].append(["agent", "c%d " % n])
                write(session_id, record)
                await asyncio.sleep(0.05)
            reply = "done"
        else:
            reply = "heard: " + text
        await self.conn.session_update(session_id, update_agent_message_text(reply))
        record["history"].append(["agent", reply])
        write(session_id, record)
        return PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    STATE.mkdir(parents=True, exist_ok=True)
    asyncio.run(run_agent(RestartAgent()))
