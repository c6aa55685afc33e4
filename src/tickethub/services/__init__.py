"""Use cases: the only way state changes. Doors and channels call these."""
