"""The command-line shell: the only layer that imports click/rich, prints, or exits."""
