"""The three tracks at run time: :class:`~memory.runtime.manager.MemoryManager` (recent window, summary,
long-term store), governed recall, lifecycle (versions, forgetting) and erasure with its verification.
"""
