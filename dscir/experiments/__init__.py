"""Reproductions of the papers' studies, shared by the CLI and benchmarks/."""
