"""A legacy-SSE MCP server that goes silent at a call: run as ``python mcp_silent_sse_server.py PORT``.

It answers ``initialize`` and ``tools/list`` (one tool, ``hang``), any other request with "method not found"
as a legacy server does, then never answers the POST that carries a ``tools/call`` and sends nothing more on
its event stream — not even keep-alive pings: a server wedged mid-call (or a proxy that stopped passing bytes).
Plain ``http.server``: the SDK's server would ping.
"""

from __future__ import annotations

import json
import queue
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_OUT: queue.Queue[str] = queue.Queue()
_NEVER = threading.Event()
_TOOL = {"name": "hang", "description": "Never answers.", "inputSchema": {"type": "object", "properties": {}}}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-store")
        self.end_headers()
        self.wfile.write(b"event: endpoint\ndata: /messages?session_id=silent\n\n")
        self.wfile.flush()
        while True:
            try:
                item = _OUT.get(timeout=0.5)
            except queue.Empty:
                continue
            try:
                self.wfile.write(f"event: message\ndata: {item}\n\n".encode())
                self.wfile.flush()
            except OSError:
                return

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        method = body.get("method")
        if method == "tools/call":
            _NEVER.wait()  # silent from here: this POST is never answered
            return
        self.send_response(202)
        self.send_header("content-length", "8")
        self.end_headers()
        self.wfile.write(b"Accepted")
        self.wfile.flush()
        if method == "initialize":
            result = {
                "protocolVersion": body["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "silent", "version": "1"},
            }
            _OUT.put(json.dumps({"jsonrpc": "2.0", "id": body["id"], "result": result}))
        elif method == "tools/list":
            _OUT.put(json.dumps({"jsonrpc": "2.0", "id": body["id"], "result": {"tools": [_TOOL]}}))
        elif "id" in body:
            # What any JSON-RPC server of the pre-2026 protocol says to a request it does not know, such as the
            # SDK's ``server/discover`` probe (which otherwise waits 10 s on every connect before falling back).
            error = {"code": -32601, "message": f"Method not found: {method}"}
            _OUT.put(json.dumps({"jsonrpc": "2.0", "id": body["id"], "error": error}))


def main(port: int) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", port), _Handler)
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    main(int(sys.argv[1]))
