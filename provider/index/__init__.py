"""Index access: read-only connection, live schema verdict, freshness."""
