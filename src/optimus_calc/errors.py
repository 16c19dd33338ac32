"""One error hierarchy. The CLI maps InputError to exit status 2 with a one-line message.

The pattern (a project base class mixed into a builtin) follows pint's DefinitionError.
"""


class OptimusError(Exception):
    """Base class of every error optimus-calc raises on purpose."""


class InputError(OptimusError, ValueError):
    """Bad user input: a flag value, a name, a file. Exit status 2."""


class CatalogError(InputError):
    """A catalog file that does not parse or validate; the message names file and field."""


class UnknownNameError(InputError, KeyError):
    """A catalog name that does not exist; the message suggests close names."""

    def __str__(self) -> str:  # KeyError would add quotes around the message
        return str(self.args[0]) if self.args else ""
