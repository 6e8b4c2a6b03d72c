"""An ACP agent (the official Python SDK, `agent-client-protocol`) that reads and writes files with its own code,
not through the client's fs/* methods: what `oa-bridge serve --sandbox-agent` has to confine (issue 27).

A prompt runs by its first word and is answered with one agent message:
- `own-read <path>`: `ok <the file's text>` or `refused <errno name>`;
- `own-write <path> <text>`: writes it, `ok` or `refused <errno name>`;
- `own-list <directory>`: `ok <names, sorted, comma-separated>` or `refused <errno name>`;
- `own-spawn <program> <args...>`: starts it without waiting (a tool process), `ok` or `refused <errno name>`;
- `terminal <command line>`: terminal/create through the client: `ok <terminalId>` or `error <code> <message>`;
- `caps`: the clientCapabilities the client (the bridge) sent in initialize, as JSON;
- `whoami`: `pid <its process id> pgid <its process group> tmpdir <$TMPDIR>`;
- anything else: `heard: <text>`.
"""
import asyncio
import errno
import json
import os
import subprocess

from acp import PROTOCOL_VERSION, RequestError, run_agent, update_agent_message_text
from acp.schema import AgentCapabilities, Implementation, InitializeResponse, NewSessionResponse, PromptResponse

CAPS = {}


def refused(error: OSError) -> str:
    return "refused " + errno.errorcode.get(error.errno, str(error.errno))


class OwnCodeAgent:
    def on_connect(self, conn):
        self.conn = conn

    async def initialize(self, protocol_version, client_capabilities=None, client_info=None, **kwargs):
        if client_capabilities is not None:
            CAPS.update(client_capabilities.model_dump(by_alias=True, exclude_none=True))
        return InitializeResponse(protocol_version=PROTOCOL_VERSION, agent_capabilities=AgentCapabilities(),
                                  agent_info=Implementation(name="own-code-agent", version="1.0"))

    async def new_session(self, cwd, mcp_servers=None, **kwargs):
        return NewSessionResponse(session_id="own-1")

    async def prompt(self, session_id, prompt, **kwargs):
        text = " ".join(getattr(block, "text", "") or "" for block in prompt)
        word, _, rest = text.partition(" ")
        if word == "own-read":
            try:
                with open(rest) as f:
                    answer = "ok " + f.read()
            except OSError as error:
                answer = refused(error)
        elif word == "own-write":
            path, _, content = rest.partition(" ")
            try:
                with open(path, "w") as f:
                    f.write(content)
                answer = "ok"
            except OSError as error:
                answer = refused(error)
        elif word == "own-list":
            try:
                answer = "ok " + ",".join(sorted(os.listdir(rest)))
            except OSError as error:
                answer = refused(error)
        elif word == "own-spawn":
            # A tool process it does not wait for (as an agent's long-running command).
            try:
                subprocess.Popen(rest.split(" "), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                answer = "ok"
            except OSError as error:
                answer = refused(error)
        elif word == "terminal":
            # terminal/create through the client, as an agent runs a command: `ok <terminalId>` or `error <code> <message>`.
            try:
                created = await self.conn._conn.send_request("terminal/create", {"sessionId": session_id, "command": rest})
                answer = "ok " + created["terminalId"]
            except RequestError as error:
                answer = "error %s %s" % (error.code, error)
        elif word == "caps":
            answer = json.dumps(CAPS, sort_keys=True)
        elif word == "whoami":
            answer = "pid %d pgid %d tmpdir %s" % (os.getpid(), os.getpgid(0), os.environ.get("TMPDIR", ""))
        else:
            answer = "heard: " + text
        await self.conn.session_update(session_id, update_agent_message_text(answer))
        return PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id, **kwargs):
        pass


asyncio.run(run_agent(OwnCodeAgent()))
