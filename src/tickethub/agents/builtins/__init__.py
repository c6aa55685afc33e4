"""The agents that ship with the hub, registered like any plugin (``agents/registry.py``)."""
