"""The fixed SQL templates: loading, parameters and their sqlglot verification."""
