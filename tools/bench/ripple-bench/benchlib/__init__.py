"""ripple-bench's library: pure metrics (metrics.py) and the outputs (report.py)."""
