"""LIBERO on the real simulator (see suite.py, env.py)."""
