"""The config's building blocks: `Section` (every section refuses unknown keys), and the two settings
several sections share: an OpenAI-compatible endpoint and a policy to sample from."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from flows.errors import ConfigError
from verifiers.endpoint import Endpoint, EndpointSettings


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _partial_tables_keep_the_fields_default(cls, data: Any) -> Any:
        """A nested section given in part (a TOML table, ``--set genrm.judge_model.seed=1``) changes only
        the keys it names; the others keep the field's default, which may not be the nested class's own
        (`genrm.judge_model` is a wider model than `ModelConfig()`): without this, naming one key of it
        silently replaced the rest with the class's defaults."""
        if not isinstance(data, dict):
            return data
        merged = dict(data)
        for name, field in cls.model_fields.items():
            given = merged.get(name)
            if isinstance(given, dict) and not field.is_required():
                default = field.get_default(call_default_factory=True)
                if isinstance(default, BaseModel):
                    merged[name] = {**default.model_dump(), **given}
        return merged


class EndpointConfig(EndpointSettings):
    """An OpenAI-compatible endpoint (vLLM, `m1 serve model`, a hosted API). The API key is read from
    ``$OPENAI_API_KEY`` rather than stored here, so it never shows in the UI's parameter form."""

    # The fields are verifiers.endpoint.EndpointSettings' (the judges' options and the client share them);
    # the config adds only its own error for an endpoint that is not configured.
    def client(self) -> Endpoint:
        """The project's one client (verifiers.endpoint.Endpoint) for this endpoint."""
        if not self.url:
            raise ConfigError("no endpoint configured (url is unset)")
        return super().client()


class PolicyConfig(Section):
    """Where sampled responses come from (pass-rate filtering, logic calibration): an m1model checkpoint
    in process, else an endpoint. In `m1 run`, an unset policy means the run's SFT warm-start model."""

    checkpoint: str | None = Field(None, description="m1model checkpoint folder, sampled in process")
    endpoint: EndpointConfig = EndpointConfig()
    max_tokens: int = Field(1024, ge=1)
    temperature: float = Field(1.0, ge=0)

    @property
    def configured(self) -> bool:
        return bool(self.checkpoint or self.endpoint.url)
