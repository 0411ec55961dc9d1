"""Generative reward models: judges that score responses by asking a model, over any OpenAI-compatible
endpoint (vLLM, a hosted API, or the project's own judge served by `m1 serve model`).

- `genrm-grade` (grade.py): five-grade judgment against a reference answer, reward in [0, 1].
- `genrm-pair` (pair.py), also registered as `genrm`, the name curricula use for the `general` domain:
  blind pairwise comparison with the reference in both orders, reward in [-1, 1], plus constraint rules.

Prompts (prompts.py) and verdict parsing (parse.py) are shared with `m1 genrm train-judge`, which trains
the project's own judge on exactly these prompts. How good a judge is (evaluate.py: label agreement,
Best-of-N, the gate a run asks before training on it) and Swiss-round reference selection (swiss.py) are
computed here too; flows/genrm/ only wires them into the CLI and the general-task flow. Options: options.py (constructor options or
``M1_GENRM_*`` environment variables). This package never imports m1model: the judge is only an endpoint.
"""
