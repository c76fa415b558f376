"""Errors a user can act on."""


class InputError(ValueError):
    """Bad input (a file, a setting, a partition key).

    The message names the thing that is wrong, where, and how to fix it; it never contains secrets.
    Raised before anything is written, so a failed step leaves the warehouse as it was.
    """
