"""tickethub: a self-hosted hub where AI agents and people work together through tickets."""

__version__ = "0.1.0"
