"""Imported by the batch workers' fork server, first (`workers.PRELOAD`), and by nothing else: the server is
killed when the run that started it exits, however it ends, and its workers with it (each dies with its parent).

Without this a killed run would leave the server and its workers behind for good: each worker holds the server's
liveness pipe open (multiprocessing's design: the server lives while any of its clients does), and waits for work
on a queue whose writing end it holds too.
"""

from cowork_assets.runtime.procfs import die_with_parent

die_with_parent()
