"""A scripted ACP agent written with the official Python SDK (`agent-client-protocol`), for the conformance tests.

It advertises every session capability (load, resume, fork, close, delete, list), sends an update before it answers
`session/new` and `session/fork` (as real agents announce their commands), and runs a prompt by its first word:

- `permission`: asks `session/request_permission`, reports `permission: <option>` or `permission error: <code>`;
- `elicit`: asks `elicitation/create`, reports `elicit: <content as JSON>` or `elicit error: <code>`;
- `ask`: asks the extension request `_test/ask`, reports `ask: <result as JSON>` or `ask error: <code>`;
- `cancel-ask`: asks `_test/ask`, then sends `$/cancel_request` for it once a phone had time to see it;
- `read <path>` / `write <path> <text>`: `fs/read_text_file` / `fs/write_text_file`, reports the raw result as JSON;
- `image`: reports `image bytes: <n>` for the base64 data of every image block;
- `meta`: reports the prompt's `_meta` as JSON;
- `mode <id>`: sends `current_mode_update` to `<id>`;
- `call <method> <JSON object>`: sends that request with the session's id added, reports `call <result as JSON>` or
  `call error: <code> <data>` (terminal/* tests);
- `update <JSON object>`: sends it as the `update` of a `session/update` (e.g. a tool call with terminal content);
- `die`: the agent process exits at once (status 3);
- `collide`: sends a `session/update` whose content block has `fooBar` and `foo_bar` (one key in snake_case), then
  `after collide`;
- `permission-collide`: asks `session/request_permission` with `toolCallId` and `tool_call_id`, reports the error code;
- anything else: `heard: <text>`.

`SCRIPT_AGENT_VERSION` in the environment changes the protocol version it answers `initialize` with;
`SCRIPT_AGENT_AUTH` makes it advertise three auth methods (`oauth` of the agent itself, `key` of type env_var needing
`SCRIPT_TEST_KEY`, `tui` of type terminal); `authenticate` records the method id under `authenticated`.
`_test/log` (an extension method) answers what the agent received that the test wants to see (`$/cancel_request`,
deleted and closed sessions) and, under `echo`, its own params.
"""
import asyncio
import json
import os
import sys
import uuid

import acp.agent.connection as agent_connection
import acp.agent.router as agent_router
from acp import PROTOCOL_VERSION, RequestError, run_agent, update_agent_message_text
from acp.router import Route
from acp.schema import (AgentCapabilities, AuthenticateResponse, AuthEnvVar, AuthMethodAgent, EnvVarAuthMethod,
                        TerminalAuthMethod, AvailableCommand, AvailableCommandsUpdate, CloseSessionResponse,
                        CurrentModeUpdate, ForkSessionResponse, Implementation, InitializeResponse,
                        ListSessionsResponse, LoadSessionResponse, NewSessionResponse, PermissionOption,
                        PromptCapabilities, PromptResponse, ResumeSessionResponse, SessionCapabilities,
                        SessionInfo, SessionMode, SessionModeState, SetSessionModeResponse, ToolCallUpdate)

LOG = {"cancel_request": [], "closed": [], "deleted": []}
AGENT = None


def modes(current="ask"):
    return SessionModeState(current_mode_id=current, available_modes=[
        SessionMode(id="ask", name="Ask"), SessionMode(id="code", name="Code")])


def patched_router(agent, use_unstable_protocol=False):
    """The SDK's router, plus the two methods it does not route: session/delete and $/cancel_request."""
    router = original_router(agent, use_unstable_protocol=use_unstable_protocol)

    async def delete(params):
        LOG["deleted"].append(params.get("sessionId"))
        return {}

    async def cancel_request(params):
        LOG["cancel_request"].append(params)

    router.add_route(Route(method="session/delete", func=delete, kind="request"))
    router.add_route(Route(method="$/cancel_request", func=cancel_request, kind="notification"))
    return router


original_router = agent_router.build_agent_router
agent_connection.build_agent_router = patched_router


class ScriptAgent:
    def on_connect(self, conn):
        self.conn = conn
        self.cancelled = {}

    async def initialize(self, protocol_version, client_capabilities=None, client_info=None, **kwargs):
        if client_capabilities is not None:
            LOG["clientCapabilities"] = client_capabilities.model_dump(by_alias=True, exclude_none=True)
        caps = AgentCapabilities(load_session=True, prompt_capabilities=PromptCapabilities(image=True),
                                 session_capabilities=SessionCapabilities.model_validate(
                                     {"resume": {}, "fork": {}, "close": {}, "list": {}, "delete": {}}))
        version = int(os.environ.get("SCRIPT_AGENT_VERSION", PROTOCOL_VERSION))
        response = InitializeResponse(protocol_version=version, agent_capabilities=caps,
                                      agent_info=Implementation(name="script-agent", title="Scripted SDK agent", version="1.0"))
        response.field_meta = {"vendor.example/build": {"commitHash": "abc", "snake_key": 1}}
        if os.environ.get("SCRIPT_AGENT_AUTH"):
            response.auth_methods = [
                AuthMethodAgent(id="oauth", name="Log in"),
                EnvVarAuthMethod(type="env_var", id="key", name="API key", vars=[AuthEnvVar(name="SCRIPT_TEST_KEY")]),
                TerminalAuthMethod(type="terminal", id="tui", name="Terminal login", args=["--login"])]
        return response

    async def authenticate(self, method_id, **kwargs):
        LOG.setdefault("authenticated", []).append(method_id)
        return AuthenticateResponse()

    async def announce(self, session_id):
        await self.conn.session_update(session_id, AvailableCommandsUpdate(
            session_update="available_commands_update",
            available_commands=[AvailableCommand(name="review", description="Review the change")]))

    async def new_session(self, cwd, mcp_servers=None, **kwargs):
        session_id = "s-" + uuid.uuid4().hex[:8]
        await self.announce(session_id)
        return NewSessionResponse(session_id=session_id, modes=modes())

    async def load_session(self, cwd, session_id, mcp_servers=None, **kwargs):
        await self.conn.session_update(session_id, update_agent_message_text("loaded history"))
        return LoadSessionResponse(modes=modes("code"))

    async def resume_session(self, session_id, cwd, mcp_servers=None, **kwargs):
        return ResumeSessionResponse(modes=modes("code"))

    async def fork_session(self, session_id, cwd, mcp_servers=None, **kwargs):
        forked = "f-" + uuid.uuid4().hex[:8]
        await self.announce(forked)
        return ForkSessionResponse(session_id=forked, modes=modes())

    async def close_session(self, session_id, **kwargs):
        LOG["closed"].append(session_id)
        return CloseSessionResponse()

    async def list_sessions(self, cwd=None, cursor=None, **kwargs):
        return ListSessionsResponse(sessions=[SessionInfo(session_id="stored-1", cwd=cwd or "/")])

    async def set_session_mode(self, session_id, mode_id, **kwargs):
        await self.conn.session_update(session_id, CurrentModeUpdate(session_update="current_mode_update", current_mode_id=mode_id))
        return SetSessionModeResponse()

    async def ask(self, method, params):
        try:
            result = await self.conn._conn.send_request(method, params)
            return json.dumps(result, sort_keys=True)
        except RequestError as error:
            return "error: %s" % error.code + (" " + json.dumps(error.data, sort_keys=True) if error.data else "")

    async def prompt(self, session_id, prompt, **kwargs):
        text = " ".join(getattr(block, "text", "") or "" for block in prompt)
        word = text.split(" ")[0] if text else ""
        say = lambda line: self.conn.session_update(session_id, update_agent_message_text(line))
        if word == "permission":
            try:
                answer = await self.conn.request_permission(
                    session_id=session_id, tool_call=ToolCallUpdate(tool_call_id="call-1", title="Run it"),
                    options=[PermissionOption(option_id="yes", name="Yes", kind="allow_once"),
                             PermissionOption(option_id="no", name="No", kind="reject_once")])
                await say("permission: " + (getattr(answer.outcome, "option_id", None) or answer.outcome.outcome))
            except RequestError as error:
                await say("permission error: %s" % error.code)
        elif word == "elicit":
            result = await self.ask("elicitation/create", {
                "sessionId": session_id, "mode": "form", "message": "Which branch?",
                "requestedSchema": {"type": "object", "properties": {"branchName": {"type": "string"},
                                                                      "dry_run": {"type": "boolean"}}}})
            await say("elicit " + result)
        elif word == "ask":
            await say("ask " + await self.ask("_test/ask", {"sessionId": session_id, "question": "ready?"}))
        elif word == "cancel-ask":
            request_id = self.conn._conn._next_request_id
            asking = asyncio.ensure_future(self.ask("_test/ask", {"sessionId": session_id, "question": "soon cancelled"}))
            await asyncio.sleep(0.3)
            await self.conn._conn.send_notification("$/cancel_request", {"requestId": request_id})
            await say("cancel-ask " + await asking)
        elif word == "read":
            await say("read " + await self.ask("fs/read_text_file", {"sessionId": session_id, "path": text.split(" ")[1]}))
        elif word == "write":
            _, path, content = text.split(" ", 2)
            await say("write " + await self.ask("fs/write_text_file", {"sessionId": session_id, "path": path, "content": content}))
        elif word == "image":
            sizes = [len(getattr(block, "data", "") or "") for block in prompt if getattr(block, "type", "") == "image"]
            await say("image bytes: %s" % ",".join(str(size) for size in sizes))
        elif word == "meta":
            await say("meta " + json.dumps(kwargs.get("field_meta"), sort_keys=True))
        elif word == "call":
            _, method, body = text.split(" ", 2)
            await say("call " + await self.ask(method, dict(json.loads(body), sessionId=session_id)))
        elif word == "die":
            os._exit(3)
        elif word == "update":
            await self.conn._conn.send_notification("session/update", {"sessionId": session_id, "update": json.loads(text.split(" ", 1)[1])})
        elif word == "mode":
            await self.conn.session_update(session_id, CurrentModeUpdate(session_update="current_mode_update", current_mode_id=text.split(" ")[1]))
        elif word == "collide":
            await self.conn._conn.send_notification("session/update", {"sessionId": session_id, "update": {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": "collide", "fooBar": 1, "foo_bar": 2}}})
            await say("after collide")
        elif word == "permission-collide":
            result = await self.ask("session/request_permission", {
                "sessionId": session_id, "toolCall": {"toolCallId": "call-1", "tool_call_id": "call-2"},
                "options": [{"optionId": "yes", "name": "Yes", "kind": "allow_once"}]})
            await say("permission-collide " + result)
        elif word == "wait":
            event = self.cancelled.setdefault(session_id, asyncio.Event())
            await event.wait()
            return PromptResponse(stop_reason="cancelled")
        else:
            await say("heard: " + text)
        return PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id, **kwargs):
        self.cancelled.setdefault(session_id, asyncio.Event()).set()

    async def ext_method(self, method, params):
        if method == "test/log":
            return dict(LOG, echo=params)
        raise RequestError.method_not_found("_" + method)

    async def ext_notification(self, method, params):
        pass


asyncio.run(run_agent(ScriptAgent(), use_unstable_protocol=True))
