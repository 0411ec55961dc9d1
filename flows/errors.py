"""User-facing errors: the CLI prints them as one line and exits with code 2, never a traceback."""


class M1Error(Exception):
    """A problem with the user's input (a file, a config, a parameter), not a bug."""


class ConfigError(M1Error):
    pass


class InputError(M1Error):
    pass
