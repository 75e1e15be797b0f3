"""The baseline: a bare Python JSON-lines loop that answers every request with an empty list."""

import json
import sys


def main() -> None:
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        message = json.loads(line)
        out.write(json.dumps({"jsonrpc": "2.0", "id": message.get("id"), "result": {"data": []}}).encode() + b"\n")
        out.flush()


if __name__ == "__main__":
    main()
