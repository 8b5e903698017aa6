"""``python -m agentactors serve``: the command's options, app and server loop (:mod:`.command`).

A package of its own, as the demo is, rather than a module at the root: the root's modules are the data model,
beneath every package, and this one imports the agent, the runtime and :mod:`agentactors.serve`, above them.
"""
