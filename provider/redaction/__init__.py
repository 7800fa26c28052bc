"""Redaction: pure text rules that hide secrets; used by retrieval (before a cut) and bounding."""
