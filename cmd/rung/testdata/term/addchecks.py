import json, subprocess, sys, os
# addchecks.py REC.json OUT.json STEP... : adds tmux's screens after the given steps ("h" after a step: its text with scrollback)
rec, out = sys.argv[1], sys.argv[2]
d = json.load(open(rec))
checks = []
for spec in sys.argv[3:]:
    hist = spec.endswith("h"); step = int(spec.rstrip("h"))
    env = dict(os.environ, H="1" if hist else "")
    o = subprocess.run([os.path.join(os.path.dirname(os.path.abspath(__file__)), "oracle.sh"), rec, str(step)], env=env, capture_output=True, text=True, check=True).stdout
    lines = [l.rstrip() for l in o.split("\n")]
    if o.endswith("\n"): lines = lines[:-1]
    if hist:
        while lines and lines[-1] == "": lines.pop()
        checks.append({"step": step, "text": lines})
    else:
        checks.append({"step": step, "screen": lines})
d["checks"] = checks
json.dump(d, open(out, "w"), indent=1, ensure_ascii=True)
