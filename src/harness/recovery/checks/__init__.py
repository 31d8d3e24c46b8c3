"""One module per part of the world ``check_world`` compares with the log."""
