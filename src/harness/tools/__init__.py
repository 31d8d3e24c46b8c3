"""Tools the agent can call: the ``Tool`` protocol, the registry, the workspace and the built-ins."""
