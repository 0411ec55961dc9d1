"""SWE tasks: real task repositories (repos.py), synthesis (synthesize.py) and validation (validate.py) in
instance images, and the tasks as files and RL items (items.py); the flow is flow.py.
"""
