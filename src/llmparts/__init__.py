"""llmparts: a minimal GPT whose parts can be swapped for LLaMA's, one switch at a time."""

__version__ = "0.1.0"
