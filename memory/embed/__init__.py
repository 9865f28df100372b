"""Embedders: the protocol, MiniLM, e5 and the lexical scorer, and the adapters for a model you bring (an
endpoint, a local folder, precomputed vectors). Above core only.
"""
