"""Provider and contract versions (kept in one place; the receipt and status report them)."""

PROVIDER_VERSION = "0.1.0"
CONTRACT_VERSION = "v0"
