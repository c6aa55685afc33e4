"""The composition root: wires settings, store, bus, services and background loops."""
