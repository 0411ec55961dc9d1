"""An OpenAI-compatible HTTP server over the m1model engine: what `m1 serve model` runs.

Routes: ``POST /v1/completions``, ``POST /v1/chat/completions`` (the tokenizer's chat template),
``GET /v1/models``, ``GET /health`` (with the batcher's counters). Sampling: ``n``, ``temperature``,
``top_p``, ``max_tokens``, ``stop`` (strings; generation also stops at EOS), ``logprobs`` (and
``top_logprobs`` for chat), ``seed``; ``stream`` sends the finished completion as one server-sent event
per choice. Concurrent requests are batched into shared engine calls (`m1model.serving.batcher`).

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
from collections.abc import Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from transformers.convert_slow_tokenizer import bytes_to_unicode

from m1model.engine import Engine, SamplingParams
from m1model.serving.batcher import DynamicBatcher, Generated
from m1model.serving.protocol import APIError, ChatRequest, CompletionRequest

_BYTE_OF = {char: byte for byte, char in bytes_to_unicode().items()}  # byte-level BPE's alphabet

ALIASES = ("default",)  # the model name the project's Endpoint sends when none is configured


@dataclass
class ServerSettings:
    model_name: str = "m1"
    max_batch_size: int = 64  # sequences per engine call
    max_wait_ms: float = 2.0  # how long the first request of a batch waits for company
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
    """Tokenise, check, generate through the batcher, and shape the OpenAI replies."""

    def __init__(self, model, tokenizer, settings: ServerSettings) -> None:
        self.model, self.tokenizer, self.settings = model, tokenizer, settings
        self.engine = Engine(model, max_batch_size=settings.max_batch_size)
        self.batcher = DynamicBatcher(
            self.engine, max_batch_size=settings.max_batch_size, max_wait_ms=settings.max_wait_ms
        )
        self.max_len = settings.max_model_len or int(model.config.max_position_embeddings)
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

    async def run(self, prompts: list[list[int]], req, max_tokens: int, top: int) -> list[Finished]:
        params = SamplingParams(
            temperature=req.temperature,
            top_p=req.top_p,
            max_tokens=max_tokens,
            stop_token_ids=self.stop_ids,
            seed=req.seed,
        )
        repeated = [p for p in prompts for _ in range(req.n)]
        try:
            generated = await self.batcher.generate(repeated, params, top_logprobs=top)
        except ValueError as exc:  # the engine's own checks
            raise APIError(400, str(exc)) from None
        except Exception as exc:  # noqa: BLE001
            raise APIError(500, f"generation failed: {type(exc).__name__}: {exc}") from None
        return [self.finish(g, req.stops) for g in generated]

    # -- replies -----------------------------------------------------------------------------------------

    def decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=True)

    def finish(self, g: Generated, stops: list[str]) -> Finished:
        c = g.completion
        ids, logprobs, top = list(c.token_ids), list(c.logprobs), g.top_logprobs
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


def _sse(chunks: list[dict[str, Any]]) -> Iterator[str]:
    for chunk in chunks:
        yield f"data: {json.dumps(chunk)}\n\n"
    yield "data: [DONE]\n\n"


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

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return service.models()

    @app.post("/v1/completions")
    async def completions(req: CompletionRequest):
        service.check_model(req.model)
        prompts = service.encode_completion_prompts(req.prompt)
        max_tokens = service.budget(prompts, req.max_tokens, 16)
        done = await service.run(prompts, req, max_tokens, req.logprobs or 0)
        head = {
            "id": f"cmpl-{uuid.uuid4().hex}",
            "object": "text_completion",
            "created": int(time.time()),
            "model": settings.model_name,
        }
        choices = [
            {
                "index": i,
                "text": f.text,
                "logprobs": service.completion_logprobs(f) if req.logprobs is not None else None,
                "finish_reason": f.finish_reason,
            }
            for i, f in enumerate(done)
        ]
        if req.stream:
            return StreamingResponse(
                _sse([head | {"choices": [c]} for c in choices]), media_type="text/event-stream"
            )
        return head | {"choices": choices, "usage": service.usage(prompts, req.n, done)}

    @app.post("/v1/chat/completions")
    async def chat(req: ChatRequest):
        service.check_model(req.model)
        prompt = service.encode_chat(req)
        max_tokens = service.budget([prompt], req.token_budget, settings.default_chat_max_tokens)
        top = (req.top_logprobs or 0) if req.logprobs else 0
        done = await service.run([prompt], req, max_tokens, top)
        head = {
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "created": int(time.time()),
            "model": settings.model_name,
        }
        if req.stream:
            chunks = [
                head
                | {
                    "object": "chat.completion.chunk",
                    "choices": [
                        {
                            "index": i,
                            "delta": {"role": "assistant", "content": f.text},
                            "logprobs": service.chat_logprobs(f) if req.logprobs else None,
                            "finish_reason": f.finish_reason,
                        }
                    ],
                }
                for i, f in enumerate(done)
            ]
            return StreamingResponse(_sse(chunks), media_type="text/event-stream")
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
