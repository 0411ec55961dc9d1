"""Bundled data: generated, never downloaded.

Not a flow: the bundled data the flows start from when the user brings none (curation's input, the
code tasks' families).
"""
