"""A real HTTP server on loopback that answers like Serper's search API, with scripted faults.

POST /search with an X-API-KEY header and {"q", "num", "page"} gets {"searchParameters", "organic": [{"title",
"link", "position", "snippet"}], "credits"} — organic results ranked by shared words with the query from the
pages it was given. `script` maps a query substring to the actions of its successive requests (the longest
substring in a query wins):
"ok", "500", "429:<seconds>" (with Retry-After), "hang:<seconds>" (answers late), "garbled" (bad JSON),
"reset" (the connection is reset without an answer)."""

from __future__ import annotations

import json
import re
import socket
import struct
import threading
import time
from collections import defaultdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

KEY = "test-key-123"


def serper_for(pages, **kwargs) -> FakeSerper:
    """A fake Serper over a cleaned pages frame's URLs and titles, accepting KEY."""
    return FakeSerper(list(zip(pages["url"], pages["title"].fill_null(""), strict=True)), key=KEY, **kwargs)


class FakeSerper:
    def __init__(self, pages: list[tuple[str, str]], key: str = KEY, script: dict | None = None):
        self.pages = pages
        self.key = key
        self.script = {k: list(v) for k, v in (script or {}).items()}
        self.log: list[dict] = []  # every request: time, query, page, status, key_ok
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/search"

    def __enter__(self) -> FakeSerper:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    def answered(self) -> dict[str, int]:
        """Successful answers per query (what Serper would bill)."""
        counts: dict[str, int] = defaultdict(int)
        for entry in self.log:
            if entry.get("status") == 200 and entry["action"] == "ok":
                counts[entry["query"]] += 1
        return dict(counts)

    def _action(self, query: str) -> str:
        """The next action of the longest needle in the query: a title that is part of another title
        ("Scoliosis") must not spend the other's faults, or a query could see more faults than scripted."""
        with self._lock:
            needles = [needle for needle in self.script if needle in query]
            actions = self.script[max(needles, key=len)] if needles else []
            return actions.pop(0) if actions else "ok"

    def _organic(self, query: str, num: int, page: int) -> list[dict]:
        words = set(re.findall(r"\w+", query.lower())) - {"site"}
        scored = [
            (len(words & set(re.findall(r"\w+", title.lower()))), i, url, title)
            for i, (url, title) in enumerate(self.pages)
        ]
        ranked = [s for s in sorted(scored, key=lambda s: (-s[0], s[1])) if s[0] > 0]
        window = ranked[(page - 1) * num : page * num]
        return [
            {"title": title, "link": url, "position": n + 1, "snippet": "…"}
            for n, (_, _, url, title) in enumerate(window)
        ]

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # keep test output clean
                pass

            def _send(self, status: int, body: bytes, headers: dict | None = None) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    for name, value in (headers or {}).items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout under test)
                    pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                request = json.loads(self.rfile.read(length) or b"{}")
                query, num, page = (
                    request.get("q", ""),
                    int(request.get("num", 10)),
                    int(request.get("page", 1)),
                )
                entry = {
                    "time": time.monotonic(),
                    "query": query,
                    "page": page,
                    "action": "ok",
                    "key_ok": self.headers.get("X-API-KEY") == fake.key,
                }
                with fake._lock:
                    fake.log.append(entry)
                if not entry["key_ok"]:
                    entry["status"] = 403
                    self._send(403, b'{"message": "Unauthorized.", "statusCode": 403}')
                    return
                action = entry["action"] = fake._action(query)
                if action == "500":
                    entry["status"] = 500
                    self._send(500, b'{"message": "Internal error"}')
                elif action.startswith("429"):
                    entry["status"] = 429
                    self._send(
                        429, b'{"message": "Too many requests"}', {"Retry-After": action.split(":")[1]}
                    )
                elif action == "reset":  # RST instead of an answer (SO_LINGER 0, then close)
                    entry["status"] = None
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    self.connection.close()
                    self.close_connection = True
                elif action == "garbled":
                    entry["status"] = 200
                    self._send(200, b'{"organic": [{"title": "half an ans')
                else:
                    if action.startswith("hang"):  # answers after the client's timeout
                        time.sleep(float(action.split(":")[1]))
                        entry["action"] = "late"
                    entry["status"] = 200
                    body = {
                        "searchParameters": {"q": query, "num": num, "page": page, "type": "search"},
                        "organic": fake._organic(query, num, page),
                        "credits": 1,
                    }
                    self._send(200, json.dumps(body).encode())

        return Handler
