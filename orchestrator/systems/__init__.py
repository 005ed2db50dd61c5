"""Systems under test: the declared hardware and software behind endpoints."""
