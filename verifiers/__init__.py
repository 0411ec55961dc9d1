"""m1-pipeline: verifiers."""
