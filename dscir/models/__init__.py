"""Each model's maths on arrays: per-document and per-user computations (numba), worker tasks, the models the engine runs."""
