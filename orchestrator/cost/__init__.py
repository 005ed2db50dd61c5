"""Cost of admissible points: a system's hourly price or an endpoint's token prices, as a
band over the share of measured throughput a buyer can expect to use (bands.py: the math)."""
