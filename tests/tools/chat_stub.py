"""A model provider's chat endpoint for tests that run the real binary against a loopback server:
POST .../chat/completions answers one short message as an OpenAI-style SSE stream."""
import http.server
import json


class StreamingChatHandler(http.server.BaseHTTPRequestHandler):
    """Subclass and set ANSWER; `received(body)` sees each request's bytes."""
    protocol_version = "HTTP/1.1"
    ANSWER = "short answer"

    def received(self, body):
        pass

    def do_POST(self):
        self.received(self.rfile.read(int(self.headers["Content-Length"])))
        chunks = [{"choices": [{"index": 0, "delta": {"content": self.ANSWER}, "finish_reason": None}]},
                  {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}]
        data = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data.encode())

    def log_message(self, *args):
        pass
