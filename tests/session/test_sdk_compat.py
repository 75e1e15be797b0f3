"""The SDK private members ``mcp_runtime._sdk_compat`` relies on still exist with the shapes it uses, and no other
module touches a library's private member.

An SDK upgrade that moves or renames one of them fails here, by name, instead of at run time in a session.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path

import pytest

from mcp_runtime import _sdk_compat

pytestmark = pytest.mark.daemon

ROOT = Path(__file__).resolve().parents[2]
OURS = ("protocol", "mcp_runtime", "app_server")
COMPAT = ROOT / "mcp_runtime" / "_sdk_compat.py"
DOCUMENTED = {("os", "_exit")}
"""Public members whose names start with an underscore."""


def _owner(path: str) -> type:
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


def _class_source(cls: type) -> str:
    """The source of a class's own functions (``inspect.getsource`` of a class fails when the library renames its
    ``__module__``, as ``httpx2`` does)."""
    functions = [inspect.unwrap(f) for f in vars(cls).values() if inspect.isfunction(inspect.unwrap(f))]
    return "\n".join(inspect.getsource(f) for f in functions)


@pytest.mark.parametrize("member", sorted(_sdk_compat.PRIVATE_MEMBERS))
def test_private_member_exists(member: str) -> None:
    owner_path, parameters = _sdk_compat.PRIVATE_MEMBERS[member]
    owner = _owner(owner_path)
    attribute = member.rpartition(".")[2]
    if not parameters:
        # An instance attribute: look for where the class sets it.
        assert f"self.{attribute} =" in _class_source(owner), f"{member} is no longer set"
        return
    function = getattr(owner, attribute, None)
    assert callable(function), f"{member} is gone from the SDK"
    assert tuple(inspect.signature(function).parameters) == parameters, f"{member} changed its signature"


@pytest.mark.parametrize("path", _sdk_compat.PRIVATE_TYPES)
def test_private_type_exists(path: str) -> None:
    assert _owner(path) is not None


def test_a_read_response_gets_the_replaced_body() -> None:
    import httpx2

    read = httpx2.Response(401, content=b"unauthorized")
    _sdk_compat.replace_read_body(read, b'{"replaced":true}')
    assert read.json() == {"replaced": True}
    streamed = httpx2.Response(401, stream=httpx2.ByteStream(b"unauthorized"))
    _sdk_compat.replace_read_body(streamed, b"{}")
    with pytest.raises(httpx2.ResponseNotRead):
        streamed.content  # noqa: B018  (a streamed response stays unread: its stream is what gets replaced)


def test_public_members_the_compat_layer_builds_on() -> None:
    from mcp.client.session import ClientSession

    assert tuple(inspect.signature(ClientSession.send_discover).parameters) == ("self", "version")
    assert tuple(inspect.signature(ClientSession.adopt).parameters) == ("self", "result")
    send = inspect.signature(ClientSession.send_request).parameters
    assert {"request", "result_type", "request_read_timeout_seconds", "progress_callback"} <= set(send)


def test_a_child_inherits_what_the_sdk_lets_a_stdio_server_inherit(monkeypatch: pytest.MonkeyPatch) -> None:
    """The copy that lets a child start before the SDK is imported is the SDK's own set, and the environment built
    from it is the one the SDK builds (a value starting ``()``, a shell function, is left out by both)."""
    from mcp.client.stdio import DEFAULT_INHERITED_ENV_VARS, get_default_environment

    from mcp_runtime.session.launch import safe_environment

    assert tuple(DEFAULT_INHERITED_ENV_VARS) == _sdk_compat.INHERITED_ENV_VARS
    monkeypatch.setenv("TERM", "() { :; }")
    monkeypatch.setenv("LOGNAME", "someone")
    monkeypatch.delenv("USER", raising=False)
    assert safe_environment() == get_default_environment()


def test_probe_bounded_client_overrides_the_session_builder() -> None:
    from mcp import Client

    bounded = _sdk_compat.probe_bounded_client(lambda error: None)
    assert issubclass(bounded, Client)
    assert bounded._build_session is not Client._build_session
    assert inspect.signature(bounded._build_session).parameters.keys() == {"self", "exit_stack"}


def test_call_result_adapter_parses_both_result_kinds() -> None:
    adapter = _sdk_compat.call_result_adapter()
    result = adapter.validate_python({"content": [{"type": "text", "text": "hi"}]})
    assert type(result).__name__ == "CallToolResult"


def test_send_request_checks_a_result_against_its_version_before_the_result_type() -> None:
    """2025-era tool results are taken through ``checked_result_adapter`` (a plain dict): that is only sound
    while ``send_request`` validates the raw result against the negotiated version first."""
    from mcp.client.session import ClientSession
    from mcp_types.methods import validate_server_result
    from pydantic import ValidationError

    assert "validate_server_result" in ClientSession.send_request.__code__.co_names
    with pytest.raises(ValidationError):
        validate_server_result("tools/call", "2025-11-25", {"content": "not a list"})
    raw = {"content": [{"type": "text", "text": "hi"}]}
    assert _sdk_compat.checked_result_adapter().validate_python(raw) == raw


def test_http_transport_still_words_its_parse_failures_as_matched() -> None:
    import mcp.client.streamable_http as streamable_http

    source = inspect.getsource(streamable_http)
    for prefix in _sdk_compat.HTTP_PARSE_FAILURES:
        assert f'f"{prefix}{{exc}}"' in source, f"the SDK no longer says {prefix!r}"
    wording = "Failed to parse SSE message: 1 validation error for X\n  Invalid JSON: bad [type=json_invalid, input=y]"
    assert _sdk_compat.http_parse_failure(-32700, wording) == "Invalid JSON: bad"
    assert _sdk_compat.http_parse_failure(-32700, "a parse error of the server's own") is None


def test_the_sdk_still_lacks_what_the_dpop_module_adds() -> None:
    """``mcp_runtime.oauth.dpop`` hands the SDK a DPoP token response as Bearer and reads the authorization server's
    DPoP algorithms from the raw metadata: while the SDK's models refuse or drop these. An SDK that learns DPoP
    fails here, so the workaround can go."""
    from mcp.shared.auth import OAuthMetadata, OAuthToken, ProtectedResourceMetadata
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        OAuthToken.model_validate({"access_token": "at", "token_type": "DPoP"})
    metadata = OAuthMetadata.model_validate({
        "issuer": "https://as.example", "authorization_endpoint": "https://as.example/authorize",
        "token_endpoint": "https://as.example/token", "dpop_signing_alg_values_supported": ["ES256"],
    })
    assert "dpop_signing_alg_values_supported" not in metadata.model_dump()
    resource = ProtectedResourceMetadata.model_validate({
        "resource": "https://mcp.example/mcp", "authorization_servers": ["https://as.example"],
        "dpop_bound_access_tokens_required": True,
    })
    assert resource.dpop_bound_access_tokens_required is True  # read as the resource asking for DPoP


# ------------------------------------------------------------------ nothing private outside the compat module


def _our_sources() -> list[Path]:
    paths = (p for package in ("mcp_runtime", "app_server") for p in (ROOT / package).rglob("*.py"))
    return [p for p in paths if p != COMPAT and p.name != "__main__.py"]


def _module_of(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _names_we_define() -> set[str]:
    """Every private name our own code defines: functions, classes, names and attributes it assigns, slots."""
    defined: set[str] = set()
    for path in (p for package in OURS for p in (ROOT / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                defined.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                defined.add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                defined.add(node.id)
            elif isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__slots__" for t in node.targets):
                defined.update(c.value for c in ast.walk(node.value) if isinstance(c, ast.Constant))
    return {name for name in defined if isinstance(name, str) and _private(name)}


def _reaches(node: ast.AST) -> str | None:
    """The private member ``node`` reaches for: ``x._name``, ``getattr(x, "_name")``, ``super()._name``."""
    if isinstance(node, ast.Attribute) and _private(node.attr):
        if isinstance(node.value, ast.Name) and (node.value.id, node.attr) in DOCUMENTED:
            return None
        return node.attr
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr"):
        name = node.args[1] if len(node.args) > 1 else None
        if isinstance(name, ast.Constant) and isinstance(name.value, str) and _private(name.value):
            return name.value
    return None


def _is_super_call(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"


def test_no_module_imports_a_private_module_of_a_library() -> None:
    found = []
    for path in _our_sources():
        for node in ast.walk(ast.parse(path.read_text())):
            modules = []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            elif isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            for module in modules:
                if not module.startswith(OURS) and any(_private(part) for part in module.split(".")):
                    found.append(f"{path.relative_to(ROOT)}: {module}")
    assert not found, found


def test_no_module_reaches_into_a_private_attribute_of_a_library_object() -> None:
    """``x._name`` outside the compat module must name something our own code defines; ``super()._name`` (a
    library base's private member, overridden and called) is never allowed there."""
    ours = _names_we_define()
    found = []
    for path in _our_sources():
        for node in ast.walk(ast.parse(path.read_text())):
            name = _reaches(node)
            inherited = isinstance(node, ast.Attribute) and _is_super_call(node.value)
            if name is not None and (name not in ours or inherited):
                found.append(f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', '?')}: {name}")
    assert not found, found


def _library_privates(cls: type) -> set[str]:
    """The private names the library classes in ``cls``'s ancestry define or set on their instances."""
    names: set[str] = set()
    for base in cls.__mro__[1:]:
        if base.__module__.startswith(OURS) or base is object:
            continue
        names.update(name for name in vars(base) if _private(name))
        names.update(re.findall(r"self\.(_[A-Za-z]\w*)\s*=", _class_source(base)))
    return names


def test_no_class_of_ours_overrides_or_uses_a_private_member_of_a_library_base() -> None:
    """A subclass of a library class must not override, call or set the base's private members (the compat
    module does, on purpose, with each one pinned above)."""
    found = []
    for path in _our_sources():
        module = importlib.import_module(_module_of(path))
        tree = ast.parse(path.read_text())
        for node in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
            cls = getattr(module, node.name, None)
            if not isinstance(cls, type):
                continue
            privates = _library_privates(cls)
            if not privates:
                continue
            mixins = [b for b in cls.__mro__ if b.__module__.startswith(OURS) and b is not cls]
            bodies = [node, *(ast.parse(inspect.getsource(b)).body[0] for b in mixins)]
            used = {
                n.attr
                for body in bodies
                for n in ast.walk(body)
                if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self"
            } | {n.name for body in bodies for n in body.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
            clash = sorted(used & privates)
            if clash:
                found.append(f"{path.relative_to(ROOT)}: {node.name} touches {clash}")
    assert not found, found
