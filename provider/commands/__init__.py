"""Operator commands: enable/disable, status, check-schema, demo and qualify."""
