#!/usr/bin/env python3
"""Records a program's output on a PTY, step by step, for TestTerminalRenderer.

    record.py OUT.json COLS ROWS STEPS.json -- COMMAND...

STEPS.json is a list of key strings to type, one step each; before the
first key the program's start-up output is recorded. After each key the
output is read until the program has been quiet for 0.5 s (or exits).
OUT.json gets {"cols", "rows", "command", "steps": [{"in", "out"}]}.
TERM is xterm-256color and LANG C.UTF-8, as on rung's PTY execs.
"""
import json, os, pty, select, struct, sys, fcntl, termios, time

def main():
    out, cols, rows, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    cmd = sys.argv[sys.argv.index("--") + 1:]
    keys = json.load(open(steps))
    pid, fd = pty.fork()
    if pid == 0:
        env = dict(os.environ, TERM="xterm-256color", LANG="C.UTF-8", LC_ALL="C.UTF-8", COLUMNS=str(cols), LINES=str(rows))
        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        os.execvpe(cmd[0], cmd, env)
    def drain():
        buf = b""
        while True:
            r, _, _ = select.select([fd], [], [], 0.5)
            if not r:
                return buf
            try:
                b = os.read(fd, 65536)
            except OSError:
                return buf
            if not b:
                return buf
            buf += b
    rec = [{"in": "", "out": drain().decode("utf-8", "replace")}]
    for k in keys:
        os.write(fd, k.encode())
        rec.append({"in": k, "out": drain().decode("utf-8", "replace")})
    os.waitpid(pid, 0)
    json.dump({"cols": cols, "rows": rows, "command": " ".join(cmd), "steps": rec}, open(out, "w"), indent=1)

main()
