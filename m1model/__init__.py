"""m1-pipeline: m1model."""
