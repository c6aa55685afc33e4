"""Extractors: one mail plus its context → operations. ``rules`` is the offline default,
``llm`` asks a model through the LLM port. Both implement :class:`base.Extractor`."""
