"""The reward function a stage trains on and evaluation scores with: the curriculum's verifier for each
domain (its ``[verifiers]`` table, else the built-in ones), built with the run's options for them.

The scoring itself is `verifiers.scoring`; this module adds what only the run knows (its folders, its
served judge) and says what a user should fix when a domain has no verifier.

Not a flow: the stage flow's wiring of the verifiers to a run's folders and served judge.
"""

from __future__ import annotations

from typing import Any

from flows.config import PipelineConfig
from flows.curriculum import Curriculum
from flows.errors import InputError
from verifiers.base import Verifier, default_registry
from verifiers.scoring import NoVerifier, make_reward_fn
from verifiers.scoring import resolve_verifiers as _resolve


def resolve_verifiers(*args: Any, **kwargs: Any) -> dict[str, Verifier]:
    """`verifiers.scoring.resolve_verifiers` (the same arguments), with a missing verifier as the user's
    error to fix."""
    try:
        return _resolve(*args, **kwargs)
    except NoVerifier as exc:
        hint = "" if exc.plugin else ": add it to the curriculum's [verifiers] table"
        raise InputError(f"{exc}{hint}") from None


def verifier_options(config) -> dict[str, dict[str, Any]]:
    """Options the run's own services and folders give the built-in verifiers that need them: the SWE
    verifier's repositories (and, with GenRM, the judge's endpoint)."""
    # heavy: prefect, libcst, polars
    from flows.swe.flow import repos_dir

    return {"swe": {"repos_dir": str(repos_dir(config))}}


def domain_reward_fn(
    tokenizer, domains, curriculum: Curriculum, config: PipelineConfig, options=None, evaluation=False
):
    """Rewards from the verifier registry: each item scored by its domain's verifier (built with the
    run's options for it, plus ``options``: e.g. a served judge's endpoint); with ``evaluation``, the
    curriculum's evaluation verifier where it names one (`Curriculum.verifier_names`)."""
    names = curriculum.verifier_names(evaluation)
    registry = default_registry(config.plugin_dirs)
    verifiers = resolve_verifiers(domains, names, registry, verifier_options(config) | (options or {}))
    return make_reward_fn(verifiers, lambda ids: tokenizer.decode(ids, skip_special_tokens=True))
