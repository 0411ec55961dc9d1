"""m1-pipeline: sandboxes."""
