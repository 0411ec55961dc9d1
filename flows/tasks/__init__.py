"""Task data as datasets: SynLogic-style logic items (`{run}-synlogic`, logic.py) and programming
problems with sandbox-checked tests (`{run}-code`, code.py). README.md here describes both."""
