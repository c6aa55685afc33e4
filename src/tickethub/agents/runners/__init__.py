"""Where a personal agent's code runs.

``hub`` (the default): the kernel calls the agent's ``run`` in the hub's process.
``actions``: a GitHub Actions workflow in the owner's own repository runs it
(``actions.py`` is the hub's side, ``remote.py`` the workflow's side, ``grants.py`` the
signed short-lived URLs between them, ``result.py`` the typed result the workflow posts).
Either way the agent's actions go through the same toolbox — scopes, budget, approvals,
audit — in the hub.
"""
