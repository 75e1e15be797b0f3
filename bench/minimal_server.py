"""A minimal Python MCP server for the peer benchmark: 16 tools over stdio with the standard library alone, so its
own start is the interpreter's (what a small server written without a framework costs) and the clients' differ.

It speaks the 2025-11-25 handshake (``initialize``, ``tools/list``, ``tools/call``, ``ping``) and answers every
other request with ``-32601``, as a server without those capabilities does.
"""

import json
import sys

TOOLS = [
    {
        "name": f"tool_{index}",
        "description": f"Echo number {index}.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    }
    for index in range(16)
]
INFO = {"name": "minimal", "version": "1.0.0"}


def _result(message: dict) -> dict | None:
    method = message.get("method")
    if method == "initialize":
        version = (message.get("params") or {}).get("protocolVersion") or "2025-11-25"
        return {"protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": INFO}
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        text = ((message.get("params") or {}).get("arguments") or {}).get("text", "")
        return {"content": [{"type": "text", "text": str(text)}]}
    if method == "ping":
        return {}
    return None


def main() -> None:
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if not isinstance(message, dict) or "id" not in message or "method" not in message:
            continue  # notifications and replies
        result = _result(message)
        if result is None:
            answer = {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "Method not found"}}
        else:
            answer = {"jsonrpc": "2.0", "id": message["id"], "result": result}
        out.write(json.dumps(answer).encode() + b"\n")
        out.flush()


if __name__ == "__main__":
    main()
