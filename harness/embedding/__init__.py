"""Text embedders: the sentence-transformers embedder (``embedder=bundled``, any Hub model or
folder) and the OpenAI-compatible one (``embedder=openai``), with the embedding cache they share.
Dense retrievers, the semantic chunkers and the embedding metrics all embed through them."""
