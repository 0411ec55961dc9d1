"""An OpenAI-compatible chat server on loopback that answers logic prompts with an oracle-with-noise
policy, for calibrating the calibration machinery.

This is a deliberately synthetic policy: it knows the gold answer of every instance it was loaded with
and answers correctly with probability 1 - 0.3 * (difficulty - 1) (so pass rates fall with difficulty
and reach 0 at level 5), otherwise with the task's near-miss corruption. Its choices are a deterministic
function of (prompt, choice index), so runs are reproducible. It speaks the real HTTP protocol, so the
httpx client, the flow and the CLI are exercised exactly as against a model server.
"""

from __future__ import annotations

import hashlib
import json
import random
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from verifiers.logic import get_task


def p_correct(difficulty: int) -> float:
    return max(0.0, 1.0 - 0.3 * (difficulty - 1))


class OracleServer:
    def __init__(self) -> None:
        self.gold: dict[str, tuple[str, str, int]] = {}  # prompt -> (answer, near miss, difficulty)
        self.requests = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if not self.path.endswith("/chat/completions"):
                    self.send_error(404)
                    return
                prompt = body["messages"][-1]["content"]
                if prompt not in server.gold:
                    self.send_error(400, "unknown prompt")
                    return
                server.requests += 1
                choices = [
                    {
                        "index": i,
                        "message": {"role": "assistant", "content": server.answer(prompt, i)},
                        "finish_reason": "stop",
                    }
                    for i in range(int(body.get("n", 1)))
                ]
                data = json.dumps(
                    {"object": "chat.completion", "model": body.get("model"), "choices": choices}
                )
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data.encode())

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def load(self, tasks: list[str], instances: int, seed: int = 0) -> None:
        """Know the instances `calibrate` will generate for these tasks (same seeds)."""
        for name in tasks:
            task = get_task(name)
            for d in task.difficulties:
                for i in range(instances):
                    inst = task.generate(d, seed * 1_000_000 + i)
                    self.gold[inst.prompt] = (inst.answer, task.corrupt(inst, i), d)

    def answer(self, prompt: str, index: int) -> str:
        gold, near_miss, difficulty = self.gold[prompt]
        digest = hashlib.sha256(f"{prompt}\0{index}".encode()).hexdigest()
        correct = random.Random(digest).random() < p_correct(difficulty)
        return (
            f"<think>Checking the rules.</think>\nFinal:\n<answer>{gold if correct else near_miss}</answer>"
        )


@pytest.fixture
def oracle_server() -> Iterator[OracleServer]:
    server = OracleServer()
    thread = threading.Thread(target=server.httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()
