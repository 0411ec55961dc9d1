"""m1-pipeline: kernels."""
