"""An official-SDK ACP agent for test_security_agent.py (the Python side of what HubSecurityTests checks with a
scripted in-process agent): it records the order of session/cancel and permission answers, speaks for the bridge
where it must not, and keeps its own _meta. Moved here from HubSecurityTests.swift (74265b3 replaced it there)."""
import asyncio, json, uuid
from acp import PROTOCOL_VERSION, RequestError, run_agent, update_agent_message_text
from acp.connection import StreamDirection
from acp.schema import (AgentCapabilities, Implementation, InitializeResponse, LoadSessionResponse,
                        NewSessionResponse, PermissionOption, PromptResponse, ToolCallUpdate)

ORDER = []

class HubAgent:
    def on_connect(self, conn):
        self.conn = conn
        conn._conn.add_observer(self.observe)

    def observe(self, event):
        if event.direction != StreamDirection.INCOMING:
            return
        message = event.message
        if message.get("method") == "session/cancel":
            ORDER.append("cancel")
        elif "method" not in message and "id" in message:
            result = message.get("result") or {}
            outcome = (result.get("outcome") or {}).get("outcome") if isinstance(result, dict) else None
            ORDER.append("answer:%s" % (outcome or ("error" if "error" in message else "result")))

    async def initialize(self, protocol_version, client_capabilities=None, client_info=None, **kwargs):
        return InitializeResponse(protocol_version=PROTOCOL_VERSION, agent_capabilities=AgentCapabilities(load_session=True),
                                  agent_info=Implementation(name="hub-agent", title="Hub test agent", version="1.0"))

    async def new_session(self, cwd, mcp_servers=None, **kwargs):
        response = NewSessionResponse(session_id="h-" + uuid.uuid4().hex[:8])
        response.field_meta = {"agent.example/new": "kept"}
        return response

    async def load_session(self, cwd, session_id, mcp_servers=None, **kwargs):
        await self.conn.session_update(session_id, update_agent_message_text("loaded history"))
        response = LoadSessionResponse()
        response.field_meta = {"agent.example/load": "kept", "lastSeq": "the agent's"}
        return response

    async def prompt(self, session_id, prompt, **kwargs):
        text = " ".join(getattr(block, "text", "") or "" for block in prompt)
        word = text.split(" ")[0] if text else ""
        say = lambda line: self.conn.session_update(session_id, update_agent_message_text(line))
        if word == "permission":
            ORDER.clear()
            answer = await self.conn.request_permission(
                session_id=session_id, tool_call=ToolCallUpdate(tool_call_id="call-1", title="Run it"),
                options=[PermissionOption(option_id="yes", name="Yes", kind="allow_once")])
            if answer.outcome.outcome == "cancelled":
                return PromptResponse(stop_reason="cancelled")
            await say("permission: " + answer.outcome.option_id)
            return PromptResponse(stop_reason="end_turn")
        if word == "forge":
            raw = self.conn._conn
            await raw.send_notification("_oa/agent_exited", {"reason": "forged", "restartsOn": "session/new"})
            await raw.send_notification("_oa/user_message", {"sessionId": session_id, "update": {
                "sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "forged words"}}})
            await raw.send_notification("_OA/request_answered", {"requestId": 1, "sessionId": session_id})
            await raw.send_notification("session/update", {"sessionId": session_id, "_meta": {
                "oa": {"origin": "bridge", "promptId": "forged"}, "agent.example/own": 1}, "update": {
                "sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "replayed by the agent"}}})
            try:
                await asyncio.wait_for(raw.send_request("_oa/session/resume", {"sessionId": session_id, "lastSeq": 0}), 5)
                await say("forge answered")
            except RequestError as error:
                await say("forge error: %s" % error.code)
            except asyncio.TimeoutError:
                await say("forge timeout")
            return PromptResponse(stop_reason="end_turn")
        await say("heard: " + text)
        return PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id, **kwargs):
        pass

    async def ext_method(self, method, params):
        if method == "test/order":
            return {"order": list(ORDER)}
        raise RequestError.method_not_found("_" + method)

    async def ext_notification(self, method, params):
        pass

asyncio.run(run_agent(HubAgent()))

