"""Output formats (table, JSON, CSV) for every command."""
