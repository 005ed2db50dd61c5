"""The REST control plane: thin routers over orchestrator services (DESIGN §2)."""
