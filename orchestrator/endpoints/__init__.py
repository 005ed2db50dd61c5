"""Registered endpoints: base URL, API flavour, served model, encrypted credentials."""
