"""What the scripted model servers of the framework tests share: a threaded HTTP server on
127.0.0.1 that keeps every request body it is sent and answers a JSON POST with `reply`.

A subclass says which paths it serves (`accepts`) and what the model answers (`reply`); one whose
replies are not plain JSON (server-sent events) brings its own `_handler`. Use it as a context
manager: the server runs inside the `with` block.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

_S = TypeVar("_S", bound="ScriptedServer")


class ScriptedServer:
    """A model API on a free port of 127.0.0.1; `requests` holds every body it was sent."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def root(self) -> str:
        """`http://127.0.0.1:PORT`, without a path."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self: _S) -> _S:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def accepts(self, path: str) -> bool:
        """Whether a POST to `path` is a call of this model API (others get 404)."""
        raise NotImplementedError

    def reply(self, body: dict[str, Any]) -> dict[str, Any]:
        """The model's answer to the request `body`."""
        raise NotImplementedError

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        scripted = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                if not scripted.accepts(self.path):
                    self.send_error(404)
                    return
                with scripted._lock:
                    scripted.requests.append(body)
                    payload = json.dumps(scripted.reply(body)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        return Handler
