"""The request bodies of the OpenAI API subset the server speaks, as pydantic models.

Fields the API defines but this server does not implement are accepted at their neutral value and
rejected (400, naming the field) otherwise, instead of being silently ignored; unknown fields are ignored,
as OpenAI-compatible servers (vLLM) do, so newer clients keep working.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

MAX_N = 64
MAX_TOP_LOGPROBS = 20


class APIError(Exception):
    """An OpenAI-style error reply: ``{"error": {"message", "type", "param", "code"}}``."""

    def __init__(self, status: int, message: str, *, param: str | None = None, kind: str | None = None):
        super().__init__(message)
        self.status, self.message, self.param = status, message, param
        self.kind = kind or ("invalid_request_error" if status < 500 else "server_error")

    def body(self) -> dict[str, Any]:
        return {
            "error": {"message": self.message, "type": self.kind, "param": self.param, "code": self.status}
        }


class _Sampling(BaseModel):
    model_config = ConfigDict(extra="ignore")

    model: str | None = None
    temperature: float = Field(1.0, ge=0, le=2)
    top_p: float = Field(1.0, gt=0, le=1)
    n: int = Field(1, ge=1, le=MAX_N)
    stop: str | list[str] | None = None
    seed: int | None = None
    stream: bool = False
    best_of: int | None = None
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    logit_bias: dict[str, float] | None = None

    @model_validator(mode="after")
    def _unsupported(self):
        for name, neutral in (
            ("presence_penalty", 0.0),
            ("frequency_penalty", 0.0),
            ("logit_bias", None),
        ):
            if getattr(self, name) not in (neutral, {}):
                raise ValueError(f"{name} is not supported by this server")
        if self.best_of not in (None, 1, self.n):
            raise ValueError("best_of is not supported by this server")
        if isinstance(self.stop, list) and len(self.stop) > 8:
            raise ValueError("stop: at most 8 sequences")
        return self

    @property
    def stops(self) -> list[str]:
        stops = [self.stop] if isinstance(self.stop, str) else list(self.stop or [])
        return [s for s in stops if s]


class CompletionRequest(_Sampling):
    prompt: str | list[str] | list[int] | list[list[int]]
    max_tokens: int | None = Field(16, ge=1)
    logprobs: int | None = Field(None, ge=0, le=MAX_TOP_LOGPROBS)
    echo: bool = False
    suffix: str | None = None

    @model_validator(mode="after")
    def _check(self):
        if self.echo:
            raise ValueError("echo is not supported by this server")
        if self.suffix:
            raise ValueError("suffix is not supported by this server")
        if isinstance(self.prompt, list) and not self.prompt:
            raise ValueError("prompt: an empty list")
        return self


class ContentPart(BaseModel):
    model_config = ConfigDict(extra="ignore")

    type: Literal["text"]
    text: str


class Message(BaseModel):
    model_config = ConfigDict(extra="ignore")

    role: Literal["system", "user", "assistant", "developer"]
    content: str | list[ContentPart] | None = None

    @property
    def text(self) -> str:
        if isinstance(self.content, list):
            return "".join(part.text for part in self.content)
        return self.content or ""


class ChatRequest(_Sampling):
    messages: list[Message] = Field(min_length=1)
    max_tokens: int | None = Field(None, ge=1)
    max_completion_tokens: int | None = Field(None, ge=1)
    logprobs: bool = False
    top_logprobs: int | None = Field(None, ge=0, le=MAX_TOP_LOGPROBS)

    @model_validator(mode="after")
    def _check(self):
        if self.top_logprobs and not self.logprobs:
            raise ValueError("top_logprobs needs logprobs: true")
        return self

    @property
    def token_budget(self) -> int | None:
        """The most tokens the completion may have, as OpenAI's chat API reads its two fields:
        ``max_completion_tokens`` (the current field) when it is set, whatever ``max_tokens`` says;
        else ``max_tokens`` (deprecated in the API, still accepted); None when neither is set (the server's
        ``default_chat_max_tokens`` then). Both are >= 1 when set. `/v1/completions` has ``max_tokens``
        only, as in OpenAI's legacy completions API."""
        return self.max_completion_tokens if self.max_completion_tokens is not None else self.max_tokens
