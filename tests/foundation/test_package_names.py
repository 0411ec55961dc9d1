"""The project's top-level packages are its own: no installed distribution ships a package of the same name.

Hugging Face's `kernels` (a hard requirement of transformers >= 5.25) is one: with it installed, transformers
finds a `kernels` package, imports this project's kernels/ in its place and fails at import time.
"""

import importlib.metadata

import pytest

TOP_LEVEL = ("flows", "verifiers", "sandboxes", "m1model", "kernels")


@pytest.mark.parametrize("package", TOP_LEVEL)
def test_no_other_distribution_ships_a_project_package(package):
    owners = set(importlib.metadata.packages_distributions().get(package, [])) - {"m1-pipeline"}
    assert not owners, (
        f"{sorted(owners)} install a top-level package {package!r}, which collides with the project's "
        f"{package}/; pin the requirement that pulls it in (pyproject.toml)"
    )


def test_transformers_imports_its_minimax_model():
    from transformers import MiniMaxForCausalLM

    assert MiniMaxForCausalLM.__name__ == "MiniMaxForCausalLM"
