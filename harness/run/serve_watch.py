"""The watchdog an experiment's policy server runs under: it dies with the harness.

``python -m harness.run.serve_watch FD STOP_TIMEOUT_S COMMAND`` runs ``COMMAND`` in a shell, in the
watchdog's own process group (the harness starts the watchdog in a new session), and reads
``FD``: the read end of a pipe whose only write end the ``harness`` process holds. However the
harness ends (a clean exit, SIGKILL, the OOM killer), the kernel closes that end, the read sees
EOF, and the watchdog stops the group: SIGTERM, then SIGKILL after ``STOP_TIMEOUT_S``. A server
(its port, a GPU holding its weights) never outlives the run that started it.

The harness stops a server itself as before (harness/run/servers.py: SIGTERM to the group, then
SIGKILL): the watchdog takes the SIGTERM as the end of the command, and leaves with the
command's status once the command has exited.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time


def main(argv: list[str]) -> int:
    fd, stop_timeout_s, command = int(argv[0]), float(argv[1]), argv[2]
    stopping = [False]

    def on_term(signum: int, _frame: object) -> None:
        stopping[0] = True  # the command got the same signal (the whole group did)

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    signal.signal(signal.SIGHUP, on_term)
    child = subprocess.Popen(["/bin/sh", "-c", command])
    harness_gone = False
    while True:
        code = child.poll()
        if code is not None:
            return code
        if not harness_gone:
            try:
                ready, _, _ = select.select([fd], [], [], 0.2)
            except InterruptedError:
                continue
            if ready and not os.read(fd, 64):  # EOF: the harness is gone, however it ended
                harness_gone = True
                print("serve_watch: the harness that started this server is gone: stopping it",
                      file=sys.stderr, flush=True)
                deadline = time.monotonic() + stop_timeout_s
                os.killpg(0, signal.SIGTERM)
        else:
            if time.monotonic() > deadline:
                os.killpg(0, signal.SIGKILL)  # this watchdog too
            time.sleep(0.05)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
