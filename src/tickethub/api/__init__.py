"""The HTTP doors: one FastAPI app, a router per door, one error mapping."""
