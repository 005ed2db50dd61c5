"""Submissions: a system + endpoint + workload + planned levels, measured and then reviewed."""
