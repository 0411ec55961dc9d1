"""User-facing errors: the CLI prints them as one line and exits with code 2, never a traceback."""


class M1Error(Exception):
    """A problem with the user's input (a file, a config, a parameter), not a bug."""


class ConfigError(M1Error):
    pass


class InputError(M1Error):
    pass


class FlowFailed(M1Error):
    """Something failed inside a flow run (a full disk, a server that went away, a bug): the message names
    the run, the project line and the error; the traceback is in the log file (flows/logs.py)."""
