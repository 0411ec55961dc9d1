"""m1-pipeline: flows.

Orchestration: the Prefect flows, the CLI, the config, the dataset store, deployments, benches and
experiments. The work itself is done by the libraries they call (verifiers, sandboxes, m1model, kernels).
"""
