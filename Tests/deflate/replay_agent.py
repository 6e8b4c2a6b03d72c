"""An ACP agent (the official Python SDK) that answers every prompt with a recorded answer: the `session/update`s of
`fast_agent_answer.jsonl`, in order, then `end_turn`. The recording's first update (`available_commands_update`) is
sent when a session is made, as the recorded agent did.

The recording (issue 32 goal 5): fast-agent 0.10.46 (`fast-agent-acp --model passthrough`) behind `oa-bridge serve`,
answering a prompt that is a typical coding agent's answer (a diagnosis, a Swift fix in a code block, what was run).
Its updates are recorded as the bridge relayed them; passthrough sends the answer as one `agent_message_chunk`, where a
model streams it in deltas, so that chunk is kept with its envelope and its text split as streaming models send it (a
word with its leading space, or one punctuation mark: 257 chunks of 3.8 characters on average).
"""
import asyncio
import json
from pathlib import Path

from acp import PROTOCOL_VERSION, run_agent
from acp.schema import AgentCapabilities, Implementation, InitializeResponse, NewSessionResponse, PromptResponse

RECORDING = [json.loads(line) for line in (Path(__file__).parent / "fast_agent_answer.jsonl").read_text().splitlines() if line]


class ReplayAgent:
    def on_connect(self, conn):
        self.conn = conn
        self.sessions = 0

    async def initialize(self, protocol_version, client_capabilities=None, client_info=None, **kwargs):
        return InitializeResponse(protocol_version=PROTOCOL_VERSION, agent_capabilities=AgentCapabilities(),
                                  agent_info=Implementation(name="replay-agent", version="1.0"))

    async def new_session(self, cwd, mcp_servers=None, **kwargs):
        self.sessions += 1
        session_id = f"replay-{self.sessions}"
        asyncio.get_running_loop().call_soon(asyncio.ensure_future, self.send(session_id, RECORDING[:1]))
        return NewSessionResponse(session_id=session_id)

    async def send(self, session_id, updates):
        for update in updates:
            await self.conn._conn.send_notification("session/update", {"sessionId": session_id, "update": update})

    async def prompt(self, session_id, prompt, **kwargs):
        await self.send(session_id, RECORDING[1:])
        return PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id, **kwargs):
        pass


asyncio.run(run_agent(ReplayAgent()))
