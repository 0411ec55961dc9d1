"""CLI command groups, one module per `m1 <group>`."""
