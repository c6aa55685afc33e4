"""The OpenAI-compatible door (``/v1``): model ``human`` asks a person through a
ticket; other models go to a configured upstream, with an approval gate on named tools."""

from tickethub.api.openai.gateway import lifespan
from tickethub.api.openai.router import router

__all__ = ["lifespan", "router"]
