"""One module per part of the world ``check_world`` compares with the log. They are the parts of
``harness.recovery.check_world``, not an API of their own: import the module you need."""

__all__: list[str] = []
