"""The ``tickethub`` command line."""
