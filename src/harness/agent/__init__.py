"""The agent loop: turns and steps over a Session, a Provider and tools (SPEC §6)."""
