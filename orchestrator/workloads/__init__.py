"""Workloads: what is sent (dataset, generation parameters, accuracy suite, default SLO)."""
