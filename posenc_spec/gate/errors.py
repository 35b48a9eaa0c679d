"""The gate's usage error, shared by every module that validates what a user typed."""


class UsageError(ValueError):
    """A bad option, key, value or file: exit status 2, one line."""
