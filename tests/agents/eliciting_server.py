"""A stdio MCP server with one tool, `deploy`, that asks its client which environment to deploy
to (form elicitation) before answering.

Written on the standard library alone (newline-delimited JSON-RPC, the stdio transport), so the
agent suite needs no MCP SDK; it only has to be a server Claude Code talks to.
"""

from __future__ import annotations

import json
import sys
from typing import Any

SCHEMA = {
    "type": "object",
    "properties": {
        "env": {"type": "string", "title": "Environment", "enum": ["staging", "production"]}
    },
    "required": ["env"],
}


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    sys.stdout.flush()


def main() -> None:
    # The tools/call waiting for the elicitation's answer, by the elicitation's id.
    waiting: dict[str, Any] = {}
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        method, ident = message.get("method"), message.get("id")
        if method == "initialize":
            send(
                {
                    "id": ident,
                    "result": {
                        "protocolVersion": message["params"].get("protocolVersion", "2025-06-18"),
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "deployer", "version": "1.0.0"},
                    },
                }
            )
        elif method == "tools/list":
            send(
                {
                    "id": ident,
                    "result": {
                        "tools": [
                            {
                                "name": "deploy",
                                "description": "Deploys to an environment the user picks.",
                                "inputSchema": {"type": "object", "properties": {}},
                            }
                        ]
                    },
                }
            )
        elif method == "tools/call":
            asking = f"elicit-{ident}"
            waiting[asking] = ident
            send(
                {
                    "id": asking,
                    "method": "elicitation/create",
                    "params": {
                        "mode": "form",
                        "message": "Which environment?",
                        "requestedSchema": SCHEMA,
                    },
                }
            )
        elif method is None and ident in waiting:
            result = message.get("result") or {}
            if result.get("action") == "accept":
                text = f"deployed to {(result.get('content') or {}).get('env')}"
            else:
                text = (
                    f"not deployed: the user chose {result.get('action') or message.get('error')}"
                )
            send(
                {"id": waiting.pop(ident), "result": {"content": [{"type": "text", "text": text}]}}
            )
        elif ident is not None and method is not None:
            send(
                {"id": ident, "result": {}}
                if method == "ping"
                else {"id": ident, "error": {"code": -32601, "message": f"no method {method}"}}
            )


if __name__ == "__main__":
    main()
