"""Retrieval: fixed SQL templates per evidence type, query terms as data, scope re-check."""
