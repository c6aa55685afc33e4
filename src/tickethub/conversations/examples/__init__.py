"""Example chat plugins built on the conversation engine."""
