"""The store: the Chroma adapter (:mod:`memory.store.chroma`, the only code that imports chromadb), the
SQLite text store, the write journal, what Chroma leaves on disk, heap hygiene and layout migration.
"""
