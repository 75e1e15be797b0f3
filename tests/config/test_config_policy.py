"""Unit tests of the config policy (SPEC §5): every rule gives its typed reason."""

from __future__ import annotations

import shutil
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_runtime.config.edits import normalized, redacted
from mcp_runtime.config.rules import parse_server_config
from protocol.jsonrpc import AppError


def reason_of(name: str, raw: Any) -> str:
    with pytest.raises(AppError) as err:
        parse_server_config(name, raw)
    return err.value.reason


def http(**fields: Any) -> dict[str, Any]:
    return {"type": "http", "url": "https://docs.example.com/mcp", **fields}


@pytest.mark.parametrize("name", ["", "a" * 25, "has space", "a__b", "dot.name", "ümlaut"])
def test_invalid_names(name: str) -> None:
    assert reason_of(name, {"command": "x"}) == "invalidServerName"


@pytest.mark.parametrize("name", ["a", "A-b_c", "x" * 24, "a_b-c"])
def test_valid_names(name: str) -> None:
    assert parse_server_config(name, {"command": "x"}).command == "x"  # type: ignore[union-attr]


def test_type_may_be_omitted_for_stdio_but_http_is_explicit() -> None:
    assert parse_server_config("a", {"command": "node"}).type == "stdio"
    assert reason_of("a", {"url": "https://x.example/mcp"}) == "invalidParams"


@pytest.mark.parametrize(
    "raw",
    [
        {"command": "node", "url": "https://x.example"},
        {"command": "node", "headers": {"X": "1"}},
        http(command="node"),
        http(env={"A": "b"}),
        {"type": "sse", "url": "https://x.example"},
    ],
)
def test_fields_of_the_other_transport_are_invalid_params(raw: dict[str, Any]) -> None:
    assert reason_of("a", raw) == "invalidParams"


@pytest.mark.parametrize(
    "header",
    ["Authorization", "proxy-authorization", "Cookie", "X-Api-Key", "X-Auth-Thing", "My-Token", "Client-Secret",
     "X-Password", "X-Credentials"],
)
def test_literal_sensitive_headers_are_inline_secrets(header: str) -> None:
    assert reason_of("a", http(headers={header: "v"})) == "inlineSecret"


@pytest.mark.parametrize(
    "header", ["Host", "content-length", "Content-Type", "Accept", "Connection", "Transfer-Encoding", "Upgrade",
               "Mcp-Session-Id", "MCP-Protocol-Version", "Mcp-Method", "Mcp-Name"]
)
def test_reserved_headers(header: str) -> None:
    assert reason_of("a", http(headers={header: "v"})) == "reservedHeader"
    assert reason_of("a", http(envHeaders={header: "VAR"})) == "reservedHeader"


@pytest.mark.parametrize(("name", "value"), [("Bad Name", "v"), ("X-Ok", "a\r\nb"), ("X-Ok", "a\nb"), ("X-Ok", "a\0"),
                                             ("", "v"), ("X:y", "v")])
def test_invalid_headers(name: str, value: str) -> None:
    assert reason_of("a", http(headers={name: value})) == "invalidHeader"


def test_env_headers_and_bearer_are_allowed_for_sensitive_names() -> None:
    config = parse_server_config("a", http(envHeaders={"X-Api-Key": "DOCS_API_KEY"}, bearerTokenEnvVar="DOCS_TOKEN"))
    assert config.env_headers == {"X-Api-Key": "DOCS_API_KEY"}  # type: ignore[union-attr]


def test_env_var_names_are_checked() -> None:
    assert reason_of("a", http(envHeaders={"X-Api-Key": "not a name"})) == "invalidParams"
    assert reason_of("a", {"command": "x", "envVars": ["1BAD"]}) == "invalidParams"


@pytest.mark.parametrize(
    "url",
    ["http://docs.example.com/mcp", "ftp://x.example/", "https://user:pw@x.example/mcp", "https://x.example/mcp#frag",
     "https:///nohost", "http://10.0.0.1/mcp", "http://127.0.0.1.evil.example/mcp", "not a url"],
)
def test_insecure_urls(url: str) -> None:
    assert reason_of("a", http(url=url)) == "insecureUrl"


@pytest.mark.parametrize("url", ["https://x.example/mcp", "http://localhost:8000/mcp", "http://127.0.0.1/mcp",
                                 "http://127.1.2.3:9/mcp", "http://[::1]:80/mcp"])
def test_secure_urls(url: str) -> None:
    assert parse_server_config("a", http(url=url)).url == url  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "fields",
    [{"headers": {"X-Title": "app"}}, {"envHeaders": {"X-Api-Key": "K"}}, {"bearerTokenEnvVar": "T"}],
)
def test_oauth_with_static_headers_conflicts(fields: dict[str, Any]) -> None:
    assert reason_of("a", http(oauth={"scopes": ["read"]}, **fields)) == "oauthHeaderConflict"


def test_oauth_resource_is_unsupported() -> None:
    assert reason_of("a", http(oauth={"resource": "https://x.example"})) == "unsupported"


MACHINE = {"grant": "clientCredentials", "clientId": "bot", "clientSecretEnvVar": "BOT_SECRET",
           "expectedIssuer": "https://login.example.com"}


@pytest.mark.parametrize(
    ("oauth", "reason"),
    [
        ({"clientId": "app", "clientSecret": "literal"}, "inlineSecret"),
        ({"clientSecretEnvVar": "APP_SECRET"}, "invalidParams"),
        ({"clientId": "app", "clientSecretEnvVar": "not a name"}, "invalidParams"),
        ({"clientId": "app", "expectedIssuer": "https://login.example.com"}, "invalidParams"),
        ({**MACHINE, "clientSecretEnvVar": None}, "invalidParams"),
        ({**MACHINE, "expectedIssuer": None}, "invalidParams"),
        ({**MACHINE, "expectedIssuer": "http://login.example.com"}, "insecureUrl"),
        ({**MACHINE, "grant": "password"}, "invalidParams"),
    ],
)
def test_oauth_clients_take_secrets_only_from_the_environment(oauth: dict[str, Any], reason: str) -> None:
    oauth = {k: v for k, v in oauth.items() if v is not None}
    assert reason_of("a", http(oauth=oauth)) == reason


@pytest.mark.parametrize(
    "oauth", [{"clientId": "app"}, {"clientId": "app", "clientSecretEnvVar": "APP_SECRET"}, MACHINE]
)
def test_pre_registered_and_machine_clients_are_accepted(oauth: dict[str, Any]) -> None:
    parse_server_config("a", http(oauth=oauth))


def test_oauth_allowed_origins_follow_url_policy() -> None:
    assert reason_of("a", http(oauth={"allowedOrigins": ["http://login.example.com"]})) == "insecureUrl"
    parse_server_config("a", http(oauth={"allowedOrigins": ["https://login.example.com"]}))


def test_cwd_must_be_absolute() -> None:
    assert reason_of("a", {"command": "x", "cwd": "relative/dir"}) == "invalidParams"


@pytest.mark.parametrize("field", [("startupTimeoutMs", 0), ("startupTimeoutMs", 600_001), ("toolTimeoutMs", 300_001),
                                   ("toolLoading", "lazy"), ("protocol", "2024-01-01")])
def test_ranges_and_enums(field: tuple[str, Any]) -> None:
    assert reason_of("a", {"command": "x", field[0]: field[1]}) == "invalidParams"


def test_redaction_hides_env_and_header_values_only() -> None:
    stdio = parse_server_config("a", {"command": "x", "env": {"TOKEN": "s3cr3t"}, "envVars": ["GITHUB_TOKEN"]})
    shown = redacted(stdio)
    assert shown["env"] == {"TOKEN": "***"} and shown["envVars"] == ["GITHUB_TOKEN"]
    web = parse_server_config("b", http(headers={"X-Title": "app"}, envHeaders={"X-Api-Key": "KEY_VAR"}))
    shown = redacted(web)
    assert shown["headers"] == {"X-Title": "***"} and shown["envHeaders"] == {"X-Api-Key": "KEY_VAR"}


def test_normalization_fills_defaults_and_ignores_sync_targets() -> None:
    a = parse_server_config("a", {"command": "x"})
    b = parse_server_config("a", {"type": "stdio", "command": "x", "args": [], "startupTimeoutMs": 30000,
                                  "apps": {"codex": True}})
    assert normalized(a) == normalized(b)
    assert normalized(a) != normalized(parse_server_config("a", {"command": "x", "args": ["y"]}))


def test_validation_errors_hide_union_labels_and_class_names() -> None:
    from pydantic import ValidationError

    from protocol.jsonrpc import validation_errors
    from protocol.lifecycle import CancelRequestParams, InitializeParams

    with pytest.raises(ValidationError) as union:
        CancelRequestParams.model_validate({"id": [1]})
    plain = "Input should be a valid string or a valid integer"
    assert validation_errors(union.value) == [{"path": "id", "message": plain}]
    with pytest.raises(ValidationError) as model:
        InitializeParams.model_validate({"clientInfo": 5})
    expected = [{"path": "params.clientInfo", "message": "Input should be an object"}]
    assert validation_errors(model.value, ("params",)) == expected


# --- lossless editing and the deployment policy ---------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "patch", "result"),
    [  # RFC 7396 appendix A
        ({"a": "b"}, {"a": "c"}, {"a": "c"}),
        ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
        ({"a": "b"}, {"a": None}, {}),
        ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
        ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
        ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
        ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
        ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
        ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
        ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
    ],
)
def test_merge_patch_follows_rfc_7396(target: Any, patch: Any, result: Any) -> None:
    from mcp_runtime.config.edits import merge_patch

    assert merge_patch(target, patch) == result


def test_stored_form_keeps_only_what_the_user_wrote() -> None:
    from mcp_runtime.config.edits import to_wire

    config = parse_server_config("a", {"command": "x", "toolTimeoutMs": 9000})
    assert to_wire(config) == {"type": "stdio", "command": "x", "toolTimeoutMs": 9000}
    assert config.startup_timeout_ms == 30000  # the default still applies when used
    assert normalized(config)["startupTimeoutMs"] == 30000


def test_redacted_values_are_restored_from_the_stored_config() -> None:
    from mcp_runtime.config.edits import patched, restore_redacted

    stored = parse_server_config("a", {"command": "x", "env": {"K": "secret", "L": "1"}})
    sent = parse_server_config("a", {"command": "x", "env": {"K": "***", "L": "2"}, "description": "d"})
    assert restore_redacted(sent, stored).env == {"K": "secret", "L": "2"}
    with pytest.raises(AppError) as err:
        restore_redacted(parse_server_config("a", {"command": "x", "env": {"M": "***"}}), stored)
    assert (err.value.reason, err.value.details["path"]) == ("redactedValue", "config.env.M")
    web = parse_server_config("w", {"type": "http", "url": "https://w.example.com", "headers": {"X-Title": "t"}})
    assert patched("w", web, {"headers": {"X-Title": "***"}, "enabled": False}).headers == {"X-Title": "t"}


@pytest.mark.parametrize(
    ("stored", "edit"),
    [
        ({"command": "x", "env": {"K": "s"}}, {"command": "y"}),
        ({"command": "x", "env": {"K": "s"}}, {"args": ["--other"]}),
        ({"command": "x", "args": ["a"], "env": {"K": "s"}}, {"args": ["a", "b"]}),
        ({"type": "http", "url": "https://w.example.com/mcp", "headers": {"X-T": "s"}}, {"url": "https://e.example.com/mcp"}),
        ({"type": "http", "url": "https://w.example.com/mcp", "headers": {"X-T": "s"}}, {"url": "https://w.example.com:444/mcp"}),
        ({"type": "http", "url": "https://w.example.com/mcp", "headers": {"X-T": "s"}}, {"url": "https://w.example.com/x"}),
    ],
)  # fmt: skip
def test_a_kept_value_never_moves_to_a_new_destination(stored: dict[str, Any], edit: dict[str, Any]) -> None:
    from mcp_runtime.config.edits import patched, redacted, restore_redacted

    old = parse_server_config("a", stored)
    field = "env" if old.type == "stdio" else "headers"
    key = next(iter(stored[field]))
    for attempt in (
        lambda: restore_redacted(parse_server_config("a", {**redacted(old), **edit}), old),
        lambda: patched("a", old, edit),
        lambda: patched("a", old, {**edit, field: {key: "***"}}),
    ):
        with pytest.raises(AppError) as err:
            attempt()
        assert (err.value.reason, err.value.details["path"]) == ("redactedValue", f"config.{field}.{key}")
    assert getattr(patched("a", old, {**edit, field: {key: "new"}}), field) == {key: "new"}
    assert getattr(patched("a", old, {**edit, field: None}), field) == {}


def test_policy_options() -> None:
    from app_server.process import options
    from mcp_runtime.config.policy import ConfigPolicy

    def policy_of(*argv: str) -> ConfigPolicy:
        args = options.parse(argv)
        return ConfigPolicy(args.transports, args.stdio_sandbox)

    default = policy_of()
    assert default.transports == {"stdio", "http"} and default.stdio_sandbox == ()
    policy = policy_of("--transports", " stdio ", "--stdio-sandbox", '["env", "--die-with-parent"]')
    config = parse_server_config("a", {"command": "node", "args": ["s.js"]})
    assert policy.stdio_sandbox == (shutil.which("env"), "--die-with-parent") and not policy.path_from_shell
    assert [options.parse(argv).path_from_shell for argv in ([], ["--path-from-shell", "never"])] == ["auto", "never"]
    policy.check_transport(config, "a")
    with pytest.raises(AppError) as err:
        policy.check_transport(parse_server_config("w", {"type": "http", "url": "https://w.example.com"}), "w")
    assert (err.value.reason, err.value.code, err.value.details) == (
        "transportNotAllowed", -32012, {"transport": "http", "name": "w"},
    )  # fmt: skip
    bad = [("--transports", "sse"), ("--transports", ","), ("--stdio-sandbox", "{"), ("--stdio-sandbox", "[]"),
           ("--stdio-sandbox", '"bwrap"'), ("--stdio-sandbox", "[1]"), ("--path-from-shell", "always")]  # fmt: skip
    for argv in bad:
        with pytest.raises(options.UsageError):
            options.parse(argv)


_ENV_NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,11}", fullmatch=True)
_VALUES = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"), max_size=20)


@given(env=st.dictionaries(_ENV_NAMES, _VALUES, max_size=6), description=st.none() | st.text(max_size=10))
def test_a_listed_config_sent_back_is_the_stored_one(env: dict[str, str], description: str | None) -> None:
    from mcp_runtime.config.edits import restore_redacted, to_wire

    stored = parse_server_config("a", {"command": "x", "env": env})
    sent = redacted(stored) | ({"description": description} if description is not None else {})
    edited = restore_redacted(parse_server_config("a", sent), stored)
    assert edited.env == env
    assert to_wire(edited) == to_wire(stored) | ({"description": description} if description is not None else {})
