"""Which names hold secrets: the one rule the config rules (an inline header value), the logs and the trace apply.

A name holds a secret when, case-insensitively, it contains one of ``SECRET_NAME_PARTS``. The rule leans to
masking: ``keywords`` or ``x-private-note`` read as secrets, which costs a masked value, never a leaked one.
Standard library only: the logs apply it before anything else is loaded.
"""

SECRET_NAME_PARTS = (
    "token", "secret", "key", "auth", "password", "passwd", "session", "credential", "private", "cookie"
)
"""``auth`` covers ``Authorization`` and ``Proxy-Authorization``; ``key`` covers ``api-key`` and ``apikey``."""


def is_secret_name(name: str) -> bool:
    lowered = name.lower()
    return any(part in lowered for part in SECRET_NAME_PARTS)


def masked(value: object, depth: int = 0) -> object:
    """``value`` with every secret-named field's value replaced by ``"***"``, at any depth (nesting past 8 levels
    is cut to ``"…"``): what a log line may carry of an error's data."""
    if depth > 8:
        return "…"
    if isinstance(value, dict):
        return {k: "***" if is_secret_name(str(k)) else masked(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [masked(item, depth + 1) for item in value]
    return value
