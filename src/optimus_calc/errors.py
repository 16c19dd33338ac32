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


class FieldError(InputError):
    """Bad input in a named field of a spec (``field="tp"``), raised by the core.

    The message names fields in braces (``"{tp} 3 does not divide the 32 heads"``): the CLI
    renders each as the flag the user typed (``--tp``, cli/flags.py, one place); elsewhere it
    reads as the field name (``tp 3 does not ...``)."""

    def __init__(self, field: str, template: str):
        self.field = field
        self.template = template
        super().__init__(self.render({}))

    def render(self, names: dict[str, str]) -> str:
        """The message with each ``{field}`` replaced by ``names[field]`` (else the field)."""
        import re
        return re.sub(r"\{([a-z_]+)\}", lambda m: names.get(m[1], m[1]), self.template)

    def __str__(self) -> str:
        return self.render({})


def visible(text: str) -> str:
    """``text`` with every control or format character (ANSI escapes, BEL, newline, bidi
    overrides) shown as a visible escape (``\\x1b``, ``\\n``, ``\\u202e``): user text (a file
    name, an environment variable) echoed to a terminal never drives it."""
    import unicodedata
    out = []
    for ch in text:
        if ch != " " and unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp"):
            out.append(ch.encode("unicode_escape").decode("ascii"))
        else:
            out.append(ch)
    return "".join(out)
