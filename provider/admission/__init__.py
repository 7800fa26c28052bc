"""Admission: the operator's configuration and the pure request-admission function."""
