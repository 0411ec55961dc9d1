"""The generative judge's flows: its general-domain data and training (flow.py), serving it to the stages and
evaluation (serve.py), and what `m1 genrm` shares with them.
"""
