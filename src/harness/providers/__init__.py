"""Model providers: the ``Provider`` protocol and the DeepSeek (OpenAI-compatible) adapter."""
