"""m1-pipeline: flows."""
