"""Sample-quality diagnostics and plots."""
