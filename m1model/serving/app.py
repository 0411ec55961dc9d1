"""An OpenAI-compatible HTTP server over the m1model engine: what `m1 serve model` runs.

Routes: ``POST /v1/completions``, ``POST /v1/chat/completions`` (the tokenizer's chat template),
``GET /v1/models``, ``GET /health``, ``GET /metrics`` (Prometheus text: requests running, waiting and
preempted, memory, time to first token). Sampling: ``n``, ``temperature``, ``top_p``, ``max_tokens``,
``stop`` (strings, which end the sequence in the engine as soon as they appear; generation also stops at
EOS), ``logprobs`` (and ``top_logprobs`` for chat), ``seed``; ``stream`` sends server-sent events as
tokens are sampled (text held back while it could still be the start of a stop string or of a UTF-8
character). Concurrent requests share the engine's steps by continuous batching (`m1model.engine`,
`m1model.serving.batcher`): a request joins the running batch at the next step and leaves it when it ends.

Errors are OpenAI-shaped JSON (``{"error": {...}}``): 400 for a malformed or unsupported request, 404 for
another model's name or an unknown route, 500 (the server keeps running) if the engine itself fails.

`create_app` is a factory over a loaded model, so callers add middleware (API keys, CORS) to the app it
returns, and tests serve it on loopback. On GPUs the same clients talk to `vllm serve` of the exported
checkpoint instead.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from transformers.convert_slow_tokenizer import bytes_to_unicode

from m1model.engine import Completion, Engine, SamplingParams
from m1model.serving.batcher import Delta, EngineLoop
from m1model.serving.protocol import APIError, ChatRequest, CompletionRequest

_BYTE_OF = {char: byte for byte, char in bytes_to_unicode().items()}  # byte-level BPE's alphabet

ALIASES = ("default",)  # the model name the project's Endpoint sends when none is configured


@dataclass
class ServerSettings:
    model_name: str = "m1"
    max_num_seqs: int = 64  # requests generating at once (the engine's slots)
    max_num_batched_tokens: int = 1024  # tokens per engine step: decodes plus prefill chunks
    kv_cache_tokens: int | None = None  # KV positions per softmax layer (default 65536)
    max_model_len: int | None = None  # prompt + completion tokens; default: the model's max positions
    default_chat_max_tokens: int = 256  # when a chat request sets no max_tokens


@dataclass
class Finished:
    text: str
    token_ids: list[int]
    logprobs: list[float]
    top: list[list[tuple[int, float]]] | None
    finish_reason: str


class ModelService:
    """Tokenise, check, generate through the engine loop, and shape the OpenAI replies."""

    def __init__(self, model, tokenizer, settings: ServerSettings) -> None:
        self.model, self.tokenizer, self.settings = model, tokenizer, settings
        self.engine = Engine(
            model,
            settings.max_num_seqs,
            max_num_batched_tokens=settings.max_num_batched_tokens,
            kv_cache_tokens=settings.kv_cache_tokens,
        )
        self.batcher = EngineLoop(self.engine)
        # what one request may hold: the context, and the engine's KV cache
        context = settings.max_model_len or int(model.config.max_position_embeddings)
        self.max_len = min(context, self.engine.pool.capacity_tokens)
        self.vocab = int(model.config.vocab_size)
        self.stop_ids = tuple(t for t in (tokenizer.eos_token_id,) if t is not None)
        self.created = int(time.time())

    # -- requests -----------------------------------------------------------------------------------------

    def check_model(self, name: str | None) -> None:
        if name not in (None, self.settings.model_name, *ALIASES):
            raise APIError(
                404,
                f"model {name!r} does not exist (this server serves {self.settings.model_name!r})",
                param="model",
                kind="model_not_found",
            )

    def encode_completion_prompts(self, prompt) -> list[list[int]]:
        if isinstance(prompt, str):
            prompt = [prompt]
        if prompt and isinstance(prompt[0], int):
            prompt = [prompt]
        out = []
        for p in prompt:
            ids = list(self.tokenizer.encode(p, add_special_tokens=True)) if isinstance(p, str) else list(p)
            if not ids:
                raise APIError(400, "prompt: an empty token list", param="prompt")
            if min(ids) < 0 or max(ids) >= self.vocab:
                raise APIError(400, f"prompt: token ids must be in [0, {self.vocab})", param="prompt")
            out.append(ids)
        return out

    def encode_chat(self, req: ChatRequest) -> list[int]:
        messages = [
            {"role": m.role if m.role != "developer" else "system", "content": m.text} for m in req.messages
        ]
        try:
            text = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        except Exception as exc:  # noqa: BLE001 - a template that rejects these messages
            raise APIError(
                400, f"messages: the chat template rejected them: {exc}", param="messages"
            ) from None
        # the template writes the BOS itself
        ids = self.tokenizer.encode(text, add_special_tokens=False)
        # ids past the model's vocabulary (tokens added to the tokenizer later) cannot be embedded
        fallback = self.stop_ids[0] if self.stop_ids else 0
        return [t if t < self.vocab else fallback for t in ids]

    def budget(self, prompts: list[list[int]], requested: int | None, default: int) -> int:
        longest = max(len(p) for p in prompts)
        room = self.max_len - longest
        if room < 1:
            raise APIError(
                400, f"prompt has {longest} tokens; the model's context is {self.max_len}", param="prompt"
            )
        if requested is None:
            return min(default, room)
        if requested > room:
            raise APIError(
                400,
                f"max_tokens={requested} + prompt {longest} tokens exceeds the model's context of {self.max_len}",
                param="max_tokens",
            )
        return requested

    def params(self, req, max_tokens: int, top: int) -> SamplingParams:
        return SamplingParams(
            temperature=req.temperature,
            top_p=req.top_p,
            max_tokens=max_tokens,
            stop_token_ids=self.stop_ids,
            seed=req.seed,
            logprobs=top,
        )

    def stop_check(self, stops: list[str]) -> Callable[[list[int]], bool] | None:
        """Whether a sequence's text has reached a stop string, run on every new token in the engine
        thread: only the tail can hold a string that was not there a token ago (a character is at most
        4 byte-level tokens), so only the tail is decoded."""
        if not stops:
            return None
        window = 4 * max(len(s) for s in stops) + 2

        def reached(ids: list[int]) -> bool:
            tail = self.decode(ids[-window:])
            return any(s in tail for s in stops)

        return reached

    async def run(self, prompts: list[list[int]], req, max_tokens: int, top: int) -> list[Finished]:
        repeated = [p for p in prompts for _ in range(req.n)]
        try:
            done = await self.batcher.generate(
                repeated, self.params(req, max_tokens, top), stop=self.stop_check(req.stops)
            )
        except ValueError as exc:  # the engine's own checks
            raise APIError(400, str(exc)) from None
        except Exception as exc:  # noqa: BLE001
            raise APIError(500, f"generation failed: {type(exc).__name__}: {exc}") from None
        return [self.finish(c, req.stops) for c in done]

    async def stream(
        self,
        prompts: list[list[int]],
        req,
        max_tokens: int,
        top: int,
        chunk: Callable[[int, str, Finished, str | None], dict],
    ) -> AsyncIterator[str]:
        """Server-sent events as tokens come: ``chunk(choice, text, tokens, finish_reason)`` shapes each.
        Text is released once it can no longer change: not while it ends in part of a UTF-8 character or
        in the start of a stop string; the last event of a choice carries the rest, cut at its stop."""
        repeated = [p for p in prompts for _ in range(req.n)]
        streams = [_TextStream() for _ in repeated]
        try:
            async for d in self.batcher.stream(
                repeated, self.params(req, max_tokens, top), stop=self.stop_check(req.stops)
            ):
                text, tokens = streams[d.index].add(self, d, req.stops)
                if text or tokens.token_ids or d.finish_reason is not None:
                    reason = None if d.finish_reason is None else tokens.finish_reason
                    yield f"data: {json.dumps(chunk(d.index, text, tokens, reason))}\n\n"
        except Exception as exc:  # noqa: BLE001 - the reply has started: the error is the last event
            status = 400 if isinstance(exc, ValueError) else 500
            yield f"data: {json.dumps(APIError(status, f'{type(exc).__name__}: {exc}').body())}\n\n"
        yield "data: [DONE]\n\n"

    # -- replies -----------------------------------------------------------------------------------------

    def decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=True)

    def finish(self, c: Completion, stops: list[str]) -> Finished:
        ids, logprobs, top = list(c.token_ids), list(c.logprobs), c.top_logprobs
        reason = "stop" if c.finish_reason == "stop" else "length"  # repetition: cut short, like length
        text = self.decode(ids)
        hits = [text.find(s) for s in stops if s in text]
        if hits:
            cut = min(hits)
            text, reason = text[:cut], "stop"
            # the shortest token prefix whose text reaches the stop string (prefix texts only grow)
            lo, hi = 1, len(ids)
            while lo < hi:
                mid = (lo + hi) // 2
                if any(s in self.decode(ids[:mid]) for s in stops):
                    hi = mid
                else:
                    lo = mid + 1
            ids, logprobs, top = ids[:lo], logprobs[:lo], top[:lo] if top is not None else None
        return Finished(text, ids, logprobs, top, reason)

    def usage(self, prompts: list[list[int]], n: int, done: list[Finished]) -> dict[str, int]:
        prompt_tokens = sum(len(p) for p in prompts) * n
        completion_tokens = sum(len(f.token_ids) for f in done)
        return {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }

    def token_bytes(self, token_id: int) -> bytes:
        """The token's own bytes. A byte-level BPE token may hold part of a UTF-8 character, which
        decoding it alone would turn into U+FFFD; its bytes let a client rebuild the text exactly."""
        if token_id in self.tokenizer.all_special_ids:
            return b""
        decoder = getattr(getattr(self.tokenizer, "backend_tokenizer", None), "decoder", None)
        if type(decoder).__name__ == "ByteLevel":
            return bytes(_BYTE_OF[ch] for ch in self.tokenizer.convert_ids_to_tokens(token_id))
        return self.decode([token_id]).encode("utf-8")

    def token_text(self, token_id: int) -> str:
        """The token as text, or (as OpenAI's API writes part of a character) ``bytes:\\xNN...``."""
        raw = self.token_bytes(token_id)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return "bytes:" + "".join(f"\\x{b:02x}" for b in raw)

    def completion_logprobs(self, f: Finished) -> dict[str, Any]:
        tokens = [self.token_text(t) for t in f.token_ids]
        offsets = [len(self.decode(f.token_ids[:i])) for i in range(len(tokens))]  # into the text
        top = None
        if f.top is not None:
            top = [{self.token_text(i): lp for i, lp in row} for row in f.top]
        return {"tokens": tokens, "token_logprobs": f.logprobs, "top_logprobs": top, "text_offset": offsets}

    def chat_logprobs(self, f: Finished) -> dict[str, Any]:
        def entry(token_id: int, lp: float) -> dict[str, Any]:
            return {
                "token": self.token_text(token_id),
                "logprob": lp,
                "bytes": list(self.token_bytes(token_id)),
            }

        content = []
        for k, (t, lp) in enumerate(zip(f.token_ids, f.logprobs, strict=True)):
            row = entry(t, lp)
            row["top_logprobs"] = [entry(i, v) for i, v in f.top[k]] if f.top is not None else []
            content.append(row)
        return {"content": content}

    def models(self) -> dict[str, Any]:
        card = {
            "id": self.settings.model_name,
            "object": "model",
            "created": self.created,
            "owned_by": "m1-pipeline",
            "max_model_len": self.max_len,
        }
        return {"object": "list", "data": [card]}


class _TextStream:
    """One streamed choice: its tokens so far and how much of its text and tokens has been sent."""

    def __init__(self) -> None:
        self.ids: list[int] = []
        self.logprobs: list[float] = []
        self.top: list[list[tuple[int, float]]] | None = None
        self.chars = 0  # text sent
        self.tokens = 0  # tokens (with their logprobs) sent

    def add(self, service: ModelService, d: Delta, stops: list[str]) -> tuple[str, Finished]:
        """(text to send now, the tokens to send now as a Finished) after delta ``d``."""
        self.ids += d.token_ids
        self.logprobs += d.logprobs
        if d.top_logprobs is not None:
            self.top = (self.top or []) + d.top_logprobs
        reason = ""
        if d.finish_reason is not None:
            done = service.finish(Completion(self.ids, self.logprobs, d.finish_reason, self.top), stops)
            text, upto, reason = done.text, len(done.token_ids), done.finish_reason
        else:
            text, upto = service.decode(self.ids), len(self.ids)
            safe = len(text.rstrip("\ufffd"))  # an incomplete UTF-8 character decodes as U+FFFD
            for s in stops:  # never a stop string, and hold back what could still become one
                if (at := text.find(s)) >= 0:
                    safe = min(safe, at)
                for k in range(min(len(s) - 1, safe), 0, -1):
                    if text[:safe].endswith(s[:k]):
                        safe -= k
                        break
            text = text[:safe]
        out = text[self.chars :]
        self.chars = max(self.chars, len(text))
        top = self.top[self.tokens : upto] if self.top is not None else None
        sent = Finished(out, self.ids[self.tokens : upto], self.logprobs[self.tokens : upto], top, reason)
        self.tokens = max(self.tokens, upto)
        return out, sent


_METRICS = (  # (name, key of EngineLoop.metrics(), type, help): vLLM's metric names, m1_engine_ prefixed
    ("requests_running", "running", "gauge", "requests generating (holding a slot)"),
    ("requests_waiting", "waiting", "gauge", "requests queued for a slot"),
    ("requests_preempted", "preempted", "gauge", "queued requests that were preempted, to be recomputed"),
    ("slots_used", "slots_used", "gauge", "request slots in use"),
    ("slots_total", "slots_total", "gauge", "request slots"),
    ("kv_blocks_used", "kv_blocks_used", "gauge", "KV cache blocks in use (per softmax layer)"),
    ("kv_blocks_total", "kv_blocks_total", "gauge", "KV cache blocks (per softmax layer)"),
    ("lightning_states_bytes", "lightning_states_bytes", "gauge", "memory of the slots' lightning states"),
    ("kv_blocks_bytes", "kv_blocks_bytes", "gauge", "memory of the softmax layers' KV blocks"),
    ("requests_pending", "pending", "gauge", "requests received, not yet taken by the engine thread"),
    ("preemptions_total", "preemptions_total", "counter", "preemptions"),
    ("steps_total", "steps_total", "counter", "engine steps"),
    ("computed_tokens_total", "computed_tokens_total", "counter", "tokens run through the model"),
    ("recomputed_tokens_total", "recomputed_tokens_total", "counter", "tokens run again after a preemption"),
    ("generated_tokens_total", "generated_tokens_total", "counter", "tokens sampled"),
    ("requests_total", "requests", "counter", "requests received"),
)


def _prometheus(metrics: dict[str, float], ttft: list[float]) -> str:
    """The engine's state in Prometheus' text format, and the time to first token of recent requests."""
    lines = []
    for name, key, kind, what in _METRICS:
        lines += [
            f"# HELP m1_engine_{name} {what}",
            f"# TYPE m1_engine_{name} {kind}",
            f"m1_engine_{name} {metrics[key]}",
        ]
    name = "m1_engine_time_to_first_token_seconds"
    lines += [f"# HELP {name} time to first token of recent requests", f"# TYPE {name} summary"]
    ranked = sorted(ttft)
    for q in (0.5, 0.9, 0.99) if ranked else ():
        lines.append(f'{name}{{quantile="{q}"}} {ranked[min(len(ranked) - 1, int(q * len(ranked)))]}')
    lines += [f"{name}_count {len(ranked)}", f"{name}_sum {sum(ranked)}"]
    return "\n".join(lines) + "\n"


def create_app(model, tokenizer, settings: ServerSettings | None = None) -> FastAPI:
    """A FastAPI app serving ``model`` (an M1ForCausalLM in eval mode) with ``tokenizer``."""
    settings = settings or ServerSettings()
    service = ModelService(model, tokenizer, settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        service.batcher.start()
        yield
        service.batcher.stop()

    app = FastAPI(title="m1 model server", lifespan=lifespan)
    app.state.service = service

    @app.exception_handler(APIError)
    async def api_error(request: Request, exc: APIError) -> JSONResponse:
        return JSONResponse(exc.body(), status_code=exc.status)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        first = errors[0] if errors else {"loc": (), "msg": "invalid request"}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        message = {
            "json_invalid": "the request body is not valid JSON",
            "model_attributes_type": "the request body must be a JSON object",
        }.get(first.get("type", ""), f"{where}: {first.get('msg')}" if where else str(first.get("msg")))
        return JSONResponse(APIError(400, message, param=where or None).body(), status_code=400)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return JSONResponse(APIError(exc.status_code, str(exc.detail)).body(), status_code=exc.status_code)

    @app.exception_handler(Exception)
    async def crashed(request: Request, exc: Exception) -> JSONResponse:
        return JSONResponse(APIError(500, f"{type(exc).__name__}: {exc}").body(), status_code=500)

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {
            "status": "ok",
            "model": settings.model_name,
            "pending": service.batcher.pending,
            "batching": service.batcher.stats.as_dict(),
        }

    @app.get("/metrics")
    async def metrics() -> Response:
        body = _prometheus(service.batcher.metrics(), list(service.batcher.stats.ttft_s))
        return Response(body, media_type="text/plain; version=0.0.4; charset=utf-8")

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return service.models()

    @app.post("/v1/completions")
    async def completions(req: CompletionRequest):
        service.check_model(req.model)
        prompts = service.encode_completion_prompts(req.prompt)
        max_tokens = service.budget(prompts, req.max_tokens, 16)
        top = req.logprobs or 0
        head = {
            "id": f"cmpl-{uuid.uuid4().hex}",
            "object": "text_completion",
            "created": int(time.time()),
            "model": settings.model_name,
        }

        def choice(i: int, text: str, f: Finished, reason: str | None) -> dict[str, Any]:
            logprobs = service.completion_logprobs(f) if req.logprobs is not None else None
            return {"index": i, "text": text, "logprobs": logprobs, "finish_reason": reason}

        if req.stream:
            events = service.stream(
                prompts, req, max_tokens, top, lambda *a: head | {"choices": [choice(*a)]}
            )
            return StreamingResponse(events, media_type="text/event-stream")
        done = await service.run(prompts, req, max_tokens, top)
        choices = [choice(i, f.text, f, f.finish_reason) for i, f in enumerate(done)]
        return head | {"choices": choices, "usage": service.usage(prompts, req.n, done)}

    @app.post("/v1/chat/completions")
    async def chat(req: ChatRequest):
        service.check_model(req.model)
        prompt = service.encode_chat(req)
        max_tokens = service.budget([prompt], req.token_budget, settings.default_chat_max_tokens)
        top = (req.top_logprobs or 0) if req.logprobs else 0
        head = {
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "created": int(time.time()),
            "model": settings.model_name,
        }
        if req.stream:

            def chunk(i: int, text: str, f: Finished, reason: str | None) -> dict[str, Any]:
                delta = {"role": "assistant", "content": text}
                logprobs = service.chat_logprobs(f) if req.logprobs else None
                c = {"index": i, "delta": delta, "logprobs": logprobs, "finish_reason": reason}
                return head | {"object": "chat.completion.chunk", "choices": [c]}

            return StreamingResponse(
                service.stream([prompt], req, max_tokens, top, chunk), media_type="text/event-stream"
            )
        done = await service.run([prompt], req, max_tokens, top)
        choices = [
            {
                "index": i,
                "message": {"role": "assistant", "content": f.text},
                "logprobs": service.chat_logprobs(f) if req.logprobs else None,
                "finish_reason": f.finish_reason,
            }
            for i, f in enumerate(done)
        ]
        return head | {
            "object": "chat.completion",
            "choices": choices,
            "usage": service.usage([prompt], req.n, done),
        }

    return app


def app_from_checkpoint(checkpoint: str | Path, settings: ServerSettings | None = None, **load) -> FastAPI:
    """Load a checkpoint through `m1model.policy.load_policy` and serve it (named after its folder)."""
    from m1model.policy import load_policy

    model, tokenizer = load_policy(checkpoint, **load)
    settings = settings or ServerSettings(model_name=Path(checkpoint).resolve().name)
    return create_app(model, tokenizer, settings)
