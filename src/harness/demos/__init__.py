"""The offline demos behind ``harness demo``: ``engine`` (the Session engine alone, ``--engine``)
and ``agent`` (the whole agent cycle with a scripted model). Import the module you need; this
package re-exports nothing, so importing it costs nothing."""

__all__: list[str] = []
