"""Celery workers and the scheduler process: thin shells around orchestrator services."""
