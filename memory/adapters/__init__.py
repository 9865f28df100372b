"""Governed memory for agents, through the two conventions agents reach memory by (optional extras:
``pip install -r requirements-adapters.txt``):

* :mod:`memory.adapters.mcp_server`: an MCP server (``python -m memory mcp``) with tools to remember, recall (blind and
  governed, with every dropped candidate's reason), explain a memory's version chain and erase with verification;
* :mod:`memory.adapters.langgraph_store`: a LangGraph ``BaseStore`` over the same engine.

Both take an operating point (:mod:`memory.eval.operating_point`): the setting a study measured. The tenant and user
come from the adapter's configuration, never from text a model writes. Nothing here is imported by ``memory`` itself,
so the library and the lab do not need these packages.
"""
