"""Bounding: folding, limits, snippets, redaction and receipts."""
