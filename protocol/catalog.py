"""The single map from method name to its models; the only authority on what is dispatchable."""

from __future__ import annotations

import importlib
from functools import cached_property
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import BaseModel


def _model(ref: str) -> type[BaseModel]:
    module, _, name = ref.partition(".")
    model: type[BaseModel] = getattr(importlib.import_module(f"protocol.{module}"), name)
    return model


class MethodSpec:
    """Models are named as ``module.Class`` and imported on first use, so start-up stays fast (a plain class:
    ``dataclasses`` alone would cost the ``initialize`` answer several ms)."""

    def __init__(self, params_ref: str, result_ref: str) -> None:
        self.params_ref = params_ref
        self.result_ref = result_ref

    @cached_property
    def params(self) -> type[BaseModel]:
        return _model(self.params_ref)

    @cached_property
    def result(self) -> type[BaseModel]:
        return _model(self.result_ref)


class NotificationSpec:
    def __init__(self, params_ref: str) -> None:
        self.params_ref = params_ref

    @cached_property
    def params(self) -> type[BaseModel]:
        return _model(self.params_ref)


METHODS: dict[str, MethodSpec] = {
    "initialize": MethodSpec("lifecycle.InitializeParams", "lifecycle.InitializeResult"),
    "mcpServer/list": MethodSpec("server.ServerListParams", "server.ServerListResult"),
    "mcpServerStatus/list": MethodSpec("status.ServerStatusListParams", "status.ServerStatusListResult"),
    "mcpServer/create": MethodSpec("server.ServerCreateParams", "server.ServerResult"),
    "mcpServer/update": MethodSpec("server.ServerUpdateParams", "server.ServerResult"),
    "mcpServer/delete": MethodSpec("server.ServerNameParams", "base.Empty"),
    "mcpServer/enabled/set": MethodSpec("server.ServerEnabledSetParams", "server.ServerResult"),
    "mcpServer/importFromApp": MethodSpec("server.ImportFromAppParams", "server.ImportFromAppResult"),
    "mcpServer/syncAllToLive": MethodSpec("server.SyncAllToLiveParams", "server.SyncAllToLiveResult"),
    "mcpServer/oauth/login": MethodSpec("server.OAuthLoginParams", "server.OAuthLoginResult"),
    "mcpServer/start": MethodSpec("server.ServerNameParams", "status.ServerStartResult"),
    "mcpServer/stop": MethodSpec("server.ServerNameParams", "base.Empty"),
    "mcpServer/resource/read": MethodSpec("resource.ResourceReadParams", "resource.ResourceReadResult"),
    "mcpServer/tool/call": MethodSpec("tool.ToolCallParams", "task.ToolCallAnswer"),
    "mcpTool/list": MethodSpec("tool.ToolListParams", "tool.ToolListResult"),
    "mcpTool/listForContext": MethodSpec("tool.ToolListForContextParams", "tool.ToolListForContextResult"),
    "mcpTool/search": MethodSpec("tool.ToolSearchParams", "tool.ToolSearchResult"),
    "mcpPrompt/list": MethodSpec("prompt.PromptListParams", "prompt.PromptListResult"),
    "mcpPrompt/get": MethodSpec("prompt.PromptGetParams", "prompt.PromptGetResult"),
    "mcpResource/list": MethodSpec("resource.ResourceListParams", "resource.ResourceListResult"),
    "mcpResource/subscribe": MethodSpec("resource.ResourceSubscribeParams", "base.Empty"),
    "mcpResource/unsubscribe": MethodSpec("resource.ResourceSubscribeParams", "base.Empty"),
    "mcpServer/registry/search": MethodSpec("install.RegistrySearchParams", "install.RegistrySearchResult"),
    "mcpServer/registry/get": MethodSpec("install.RegistryGetParams", "install.RegistryGetResult"),
    "mcpServer/install": MethodSpec("install.InstallParams", "server.ServerResult"),
    "mcpServer/bundle/inspect": MethodSpec("install.BundleInspectParams", "install.BundleInspectResult"),
    "thread/start": MethodSpec("thread.ThreadStartParams", "thread.ThreadResult"),
    "thread/list": MethodSpec("thread.ThreadListParams", "thread.ThreadListResult"),
    "thread/read": MethodSpec("thread.ThreadReadParams", "thread.ThreadReadResult"),
    "thread/archive": MethodSpec("thread.ThreadIdParams", "thread.ThreadResult"),
    "thread/context/read": MethodSpec("thread.ContextReadParams", "thread.ContextReadResult"),
    "mcpServer/completion/complete": MethodSpec("completion.CompletionParams", "completion.CompletionResult"),
    "mcpServer/task/list": MethodSpec("task.TaskListParams", "task.TaskListResult"),
    "mcpServer/task/get": MethodSpec("task.TaskParams", "task.TaskResult"),
    "mcpServer/task/result": MethodSpec("task.TaskParams", "tool.ToolCallResult"),
    "mcpServer/task/cancel": MethodSpec("task.TaskParams", "task.TaskResult"),
}

NOTIFICATIONS: dict[str, NotificationSpec] = {
    "mcpServer/startupStatus/updated": NotificationSpec("status.StartupStatusUpdated"),
    "mcpServer/oauthLogin/completed": NotificationSpec("status.OAuthLoginCompleted"),
    "mcpServer/tool/progress": NotificationSpec("tool.ToolProgress"),
    "serverRequest/resolved": NotificationSpec("elicitation.ServerRequestResolved"),
    "mcpServer/elicitation/completed": NotificationSpec("elicitation.ElicitationCompleted"),
    "mcpServer/task/updated": NotificationSpec("task.TaskUpdated"),
    "mcp:tools_updated": NotificationSpec("tool.ToolsUpdated"),
    "mcp:resources_updated": NotificationSpec("resource.ResourcesUpdated"),
    "mcp:resource_updated": NotificationSpec("resource.ResourceUpdated"),
}

SERVER_REQUESTS: dict[str, MethodSpec] = {
    "mcpServer/elicitation/request": MethodSpec("elicitation.ElicitationRequest", "elicitation.ElicitationResponse"),
}

CLIENT_NOTIFICATIONS: dict[str, NotificationSpec] = {
    "initialized": NotificationSpec("base.Empty"),
    "$/cancelRequest": NotificationSpec("lifecycle.CancelRequestParams"),
}

# Dead names: answered with -32601 reason "retired" and never dispatched, typed or given a schema.
RETIRED: dict[str, str | None] = {
    "mcpTool/call": "mcpServer/tool/call",
    "mcpTool/callWithCaller": "mcpServer/tool/call",
    "mcpResource/read": "mcpServer/resource/read",
    "get_mcp_servers": "mcpServer/list",
    "mcp_list_servers_with_status": "mcpServerStatus/list",
    "mcp_list_tools": "mcpTool/list",
    "mcp_list_tools_for_context": "mcpTool/listForContext",
    "mcp_search_tools": "mcpTool/search",
    "mcp_list_prompts": "mcpPrompt/list",
    "mcp_list_resources": "mcpResource/list",
    "mcp_call_tool": "mcpServer/tool/call",
    "mcp_call_tool_with_caller": "mcpServer/tool/call",
    "mcp_get_prompt": "mcpPrompt/get",
    "mcp_read_resource": "mcpServer/resource/read",
    "mcp_start_server": "mcpServer/start",
    "mcp_stop_server": "mcpServer/stop",
    "add_mcp_server": "mcpServer/create",
    "update_mcp_server": "mcpServer/update",
    "delete_mcp_server": "mcpServer/delete",
    "toggle_mcp_server": "mcpServer/enabled/set",
    "import_mcp_from_app": "mcpServer/importFromApp",
    "sync_all_mcp_to_live": "mcpServer/syncAllToLive",
}

RETIRED_EVENTS: frozenset[str] = frozenset(
    {"mcp:server_started", "mcp:server_stopped", "mcp:server_error", "mcp:oauth_completed"}
)
