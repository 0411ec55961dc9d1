"""Experiments that check the paper's claims in miniature on the real pipeline (`m1 experiment ...`).

algorithms  CISPO vs DAPO vs GRPO and the section-5 stability options (flows/experiments/algorithms.py)
"""
