// Drives just-bash for rung's peer benchmark (bench/justbash.go).
// One process serves many requests: each stdin line is a JSON request
// {files, cwd, env, script, runs, minRuns, budgetMs}; each stdout line is
// the reply {stdout, stderr, exitCode, timesNs, cpuNs, error}. A request gets a
// fresh Bash over an in-memory file system seeded with its files; the
// script runs once untimed (that run's output is reported), then up to
// `runs` times timed, in-process, until budgetMs has passed.
import { createInterface } from "node:readline";
import { Bash } from "just-bash";

async function serve(req) {
  const files = {};
  const mtime = new Date(req.mtimeMs);
  for (const [name, content] of Object.entries(req.files)) {
    files[name] = { content, mtime, mode: 0o644 };
  }
  const bash = new Bash({ files, cwd: req.cwd, env: req.env });
  const first = await bash.exec(req.script);
  const timesNs = [];
  const cpuNs = [];
  const start = process.hrtime.bigint();
  const budget = BigInt(Math.round(req.budgetMs * 1e6));
  while (
    timesNs.length < req.minRuns ||
    (timesNs.length < req.runs && process.hrtime.bigint() - start < budget)
  ) {
    const c0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    await bash.exec(req.script);
    timesNs.push(Number(process.hrtime.bigint() - t0));
    const c = process.cpuUsage(c0);
    cpuNs.push((c.user + c.system) * 1000);
  }
  return {
    stdout: first.stdout,
    stderr: first.stderr,
    exitCode: first.exitCode,
    timesNs,
    cpuNs,
  };
}

const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of rl) {
  if (!line) continue;
  let reply;
  try {
    reply = await serve(JSON.parse(line));
  } catch (e) {
    reply = { error: String(e && e.stack ? e.stack : e) };
  }
  process.stdout.write(JSON.stringify(reply) + "\n");
}
