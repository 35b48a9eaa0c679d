"""The child side of the gate: what runs in the processes that call a target.

:mod:`.template` forks sealed children, :mod:`.serve` is a child's loop, :mod:`.state` the
global state it watches, :mod:`.convert` turns results into raw arrays, :mod:`.limits` the
operating-system side (sessions, resource limits, killing what a target leaves behind),
and :mod:`.protocol` the framed messages both sides speak. Nothing here imports the
gate's engine: a template stays a clean process.
"""
