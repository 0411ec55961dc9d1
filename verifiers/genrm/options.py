"""Judge settings: constructor options (``registry.get("genrm", url=..., k=3)``), else environment variables.

| option              | variable                      | default      | meaning                                        |
|---------------------|-------------------------------|--------------|------------------------------------------------|
| `url`               | `M1_GENRM_URL`                | (required)   | base URL ending in /v1; several, comma-separated: an ensemble (verdicts pooled) |
| `model`             | `M1_GENRM_MODEL`              | `default`    | model name sent with each request              |
| `api`               | `M1_GENRM_API`                | `chat`       | `chat` or `completions`                        |
| `k`                 | `M1_GENRM_K`                  | 1            | judge samples per judgment, averaged           |
| `temperature`       | `M1_GENRM_TEMPERATURE`        | 0 (k=1), 1   | sampling temperature of the judge              |
| `max_tokens`        | `M1_GENRM_MAX_TOKENS`         | 512          | room for the judge's reasoning and verdict     |
| `attempts`          | `M1_GENRM_ATTEMPTS`           | 3            | tries per judgment when the reply has no verdict |
| `max_response_chars`| `M1_GENRM_MAX_RESPONSE_CHARS` | 8000         | a longer response is cut (head + tail kept)    |
| `constraint_weight` | `M1_GENRM_CONSTRAINT_WEIGHT`  | 0.5          | pairwise: weight of the `constraints` rules    |
| `pair_method`       | `M1_GENRM_PAIR_METHOD`        | `pairwise`   | pairwise: `pairwise` (A/B prompt, both orders) or `pointwise` (each text graded alone) |
| `grade_views`       | `M1_GENRM_GRADE_VIEWS`        | `reference`  | five grades: against the reference (`reference`), or also against the question alone, the lower grade counting (`both`) |
| `grade_score`       | `M1_GENRM_GRADE_SCORE`        | `sampled`    | a grade as written (`sampled`), or weighted by the judge's probabilities at its grade token (`expected`: needs logprobs) |
| `timeout_s`         | `M1_GENRM_TIMEOUT_S`          | 120          | per request                                    |
| `retries`           | `M1_GENRM_RETRIES`            | 3            | transport retries (connection errors, 429, 5xx)|
| `concurrency`       | `M1_GENRM_CONCURRENCY`        | 16           | requests in flight                             |

The API key, if the endpoint needs one, is `$OPENAI_API_KEY` (the project's one client reads it).
"""

from __future__ import annotations

import os
from typing import Any

from pydantic import Field

from verifiers.endpoint import Endpoint, EndpointSettings
from verifiers.genrm.prompts import Budget

ENV_PREFIX = "M1_GENRM_"
# How a pair is judged: one prompt showing both texts, in both orders (M1 section 4.2.1), or each text
# graded alone against the question and the grades compared (verifiers/genrm/pair.py)
PAIR_METHODS = ("pairwise", "pointwise")
# What a five-grade judgment is against: the reference (M1 section 4.2.1), or the reference and, in a
# second judgment, the question alone, the lower grade counting (verifiers/genrm/grade.py)
GRADE_VIEWS = ("reference", "both")
# What a grade is: the one the judge wrote (averaged over its k samples), or its expectation under the
# judge's own probabilities at the grade token (G-Eval), which tells apart answers a written grade ties
# (flows/genrm/README.md, the tenth round)
GRADE_SCORES = ("sampled", "expected")


class JudgeOptions(EndpointSettings):
    """The judge's endpoint (the one `EndpointSettings`: url, model, api, timeout_s, retries, concurrency)
    and how it is asked. Built by `resolve`, which checks the values with messages that name the option
    or the environment variable they came from."""

    concurrency: int = Field(16, ge=1, description="parallel requests")
    k: int = 1
    temperature: float | None = None
    max_tokens: int = 512
    attempts: int = 3
    max_response_chars: int = 8000
    constraint_weight: float = 0.5
    pair_method: str = "pairwise"
    grade_views: str = "reference"
    grade_score: str = "sampled"

    @classmethod
    def resolve(cls, **options: Any) -> JudgeOptions:
        """Options given, else ``M1_GENRM_<NAME>`` from the environment, else the defaults; checked."""
        known = cls.model_fields
        unknown = sorted(set(options) - set(known))
        if unknown:
            raise ValueError(f"unknown judge option(s): {', '.join(unknown)} (known: {', '.join(known)})")
        values: dict[str, Any] = {}
        for name in known:
            raw, where = options.get(name), name
            if raw is None:
                raw, where = os.environ.get(ENV_PREFIX + name.upper()), ENV_PREFIX + name.upper()
            if raw is None or raw == "":
                continue
            kind = {"url": str, "temperature": float}.get(name, type(known[name].default))
            try:  # strings from the environment or a CLI's key=value become the option's type
                value = kind(raw) if isinstance(raw, str) or (kind is float and isinstance(raw, int)) else raw
            except ValueError:
                raise ValueError(f"{where}={raw!r} is not a {kind.__name__}") from None
            if not isinstance(value, kind):  # k=2.5 would otherwise fail only at the first judgment
                raise ValueError(f"{where}={raw!r} is not a {kind.__name__}")
            values[name] = value
        opts = cls.model_construct(**values)  # typed above; checked next, with this project's messages
        opts.check()
        return opts

    def check(self) -> None:
        if self.api not in ("chat", "completions"):
            raise ValueError(f"api must be chat or completions, not {self.api!r}")
        if self.k < 1 or self.attempts < 1 or self.max_tokens < 1 or self.concurrency < 1:
            raise ValueError("k, attempts, max_tokens and concurrency must be >= 1")
        if self.pair_method not in PAIR_METHODS:
            raise ValueError(f"pair_method must be {' or '.join(PAIR_METHODS)}, not {self.pair_method!r}")
        if self.grade_views not in GRADE_VIEWS:
            raise ValueError(f"grade_views must be {' or '.join(GRADE_VIEWS)}, not {self.grade_views!r}")
        if self.grade_score not in GRADE_SCORES:
            raise ValueError(f"grade_score must be {' or '.join(GRADE_SCORES)}, not {self.grade_score!r}")
        if self.constraint_weight < 0:
            raise ValueError("constraint_weight must be >= 0")
        if self.max_response_chars < 200:
            raise ValueError("max_response_chars must be >= 200")
        if self.retries < 0 or not self.timeout_s > 0:  # as EndpointSettings requires
            raise ValueError("retries must be >= 0 and timeout_s > 0")

    @property
    def sampling_temperature(self) -> float:
        """Greedy for one sample; k samples at temperature 1 unless set, or they would all be equal."""
        if self.temperature is not None:
            return self.temperature
        return 0.0 if self.k == 1 else 1.0

    @property
    def budget(self) -> Budget:
        return Budget(response=self.max_response_chars)

    def clients(self) -> list[Endpoint]:
        """One client per judge of ``url`` (a comma-separated list is an ensemble, asked in its order)."""
        urls = [u.strip() for u in (self.url or "").split(",") if u.strip()]
        if len(urls) < 2:
            return [self.client()]
        return [self.model_copy(update={"url": u}).client() for u in urls]

    def client(self) -> Endpoint:
        if not self.url:
            raise ValueError(
                "no judge endpoint: pass url=... to the verifier or set M1_GENRM_URL "
                "(e.g. `m1 serve model --checkpoint JUDGE` serves one at http://127.0.0.1:8001/v1)"
            )
        return super().client()
