"""``mkhub demo``: a hub and its agents as real processes on loopback, with jobs to watch.

:mod:`hub.demo.run` is the command; :mod:`hub.demo.processes` starts, waits for and stops
the hub and agent processes (the end-to-end tests use it too).
"""
