// Latencies through the E2B SDK against rung, as cmd/rung's
// BenchmarkE2BSDK runs it (same environment as smoke.mjs; RUNG_BENCH_N
// iterations, default 200). Prints one JSON line per measure:
// {"step", "ok": true, "data": {"n", "p50_ms", "p99_ms"}}.
//
// With RUNG_BENCH_WARM_SPARES=N (BenchmarkE2BSDKWarmPool: a daemon with
// that many warm spares for E2B creates) it measures only the creates,
// each once the pool holds N spares again, read from the daemon's
// metrics (RUNG_BENCH_METRICS_URL, RUNG_BENCH_TOKEN).
import { benchN as n, measure, quantiles, sdk } from './steps.mjs'

const { Sandbox } = sdk

// Warm-up, not timed: every call below is made a few hundred times
// first, so that V8 has compiled the SDK's code paths (undici,
// connect-web, FormData) before anything is timed, as in a client that
// has been running a while. Without it the first measures paid for the
// JIT: files.write + files.read took 3.2 ms as the first measure and
// 2.0-2.3 ms from the third on, in one run.
{
  const kib = 'x'.repeat(1024)
  for (let i = 0; i < 5; i++) {
    const s = await Sandbox.create('base', { timeoutMs: 300_000 })
    await s.commands.run('echo warm')
    await s.kill()
  }
  const s = await Sandbox.create('base', { timeoutMs: 300_000 })
  for (let j = 0; j < 300; j++) {
    await s.commands.run('echo warm')
    await s.isRunning()
    await s.files.write(`/home/user/warm/${j % 16}.txt`, kib)
    await s.files.read(`/home/user/warm/${j % 16}.txt`)
  }
  await s.kill()
}

const warmSpares = Number(process.env.RUNG_BENCH_WARM_SPARES || 0)

// poolFull waits until the daemon's warm pool holds warmSpares spares,
// so every timed create can claim one (the refill of the last claim is a
// container start in the background).
async function poolFull() {
  if (!warmSpares) return
  for (;;) {
    const res = await fetch(process.env.RUNG_BENCH_METRICS_URL, { headers: { Authorization: `Bearer ${process.env.RUNG_BENCH_TOKEN}` } })
    const m = (await res.text()).match(/^rung_warm_spares_ready (\d+)/m)
    if (m && Number(m[1]) >= warmSpares) return
    await new Promise((r) => setTimeout(r, 20))
  }
}

// measureCreate is measure for a step that creates a sandbox: each
// iteration waits for a full pool first (not timed) and kills its
// sandbox after (not timed).
async function measureCreate(step, count, fn) {
  const ms = []
  for (let i = 0; i < count; i++) {
    await poolFull()
    const t0 = performance.now()
    const s = await fn()
    ms.push(performance.now() - t0)
    await s.kill()
  }
  console.log(JSON.stringify({ step, ok: true, data: quantiles(ms) }))
}

// A command that only the container runs (python3), and a PTY's first
// output, on a new sandbox: the container's start is in these, unless a
// warm spare's container was claimed.
const creates = Math.max(3, Math.floor(n / 20))
await measureCreate('create_to_container_result', creates, async () => {
  const s = await Sandbox.create('base', { timeoutMs: 300_000 })
  const r = await s.commands.run('python3 -c "print(6*7)"')
  if (r.stdout !== '42\n') throw new Error(`python3: ${JSON.stringify(r)}`)
  return s
})
await measureCreate('create_to_pty_output', creates, async () => {
  const s = await Sandbox.create('base', { timeoutMs: 300_000 })
  let out = ''
  let seen
  const got = new Promise((resolve) => { seen = resolve })
  const dec = new TextDecoder()
  const h = await s.pty.create({ cols: 80, rows: 24, timeoutMs: 60_000, onData: (d) => {
    out += dec.decode(d)
    if (out.includes('42')) seen()
  } })
  await s.pty.sendInput(h.pid, new TextEncoder().encode('echo $((6*7))\n'))
  await got
  return s
})
if (warmSpares) {
  await measureCreate('create_to_first_result', creates, async () => {
    const s = await Sandbox.create('base', { timeoutMs: 300_000 })
    const r = await s.commands.run('echo ready')
    if (r.stdout !== 'ready\n') throw new Error(`first command: ${JSON.stringify(r)}`)
    return s
  })
  console.log(JSON.stringify({ step: 'done', ok: true }))
  process.exit(0)
}

// Sandbox.create until the first command's result, then kill (not timed).
await measure('create_to_first_result', Math.max(3, Math.floor(n / 20)), async () => {
  const s = await Sandbox.create('base', { timeoutMs: 300_000 })
  const r = await s.commands.run('echo ready')
  if (r.stdout !== 'ready\n') throw new Error(`first command: ${JSON.stringify(r)}`)
  await s.kill()
})

// The two halves of it apart: the create, then the first command.
{
  const created = []
  await measure('create', Math.max(3, Math.floor(n / 20)), async () => {
    created.push(await Sandbox.create('base', { timeoutMs: 300_000 }))
  })
  await measure('first_command', created.length, async (i) => {
    const r = await created[i].commands.run('echo ready')
    if (r.stdout !== 'ready\n') throw new Error(`first command: ${JSON.stringify(r)}`)
  })
  for (const s of created) await s.kill()
}

const sbx = await Sandbox.create('base', { timeoutMs: 300_000 })
for (let i = 0; i < 10; i++) await sbx.commands.run('echo hi') // warm the connection and the sandbox

// The floor under every call: one envd request through the SDK that does
// no work on the server (GET /health).
await measure('is_running', n, async () => {
  if (!(await sbx.isRunning())) throw new Error('not running')
})

// Node's own fetch of the same route, without the SDK: what the SDK adds.
await measure('raw_fetch_health', n, async () => {
  const res = await fetch(`${process.env.E2B_SANDBOX_URL}/health`, {
    headers: { 'E2b-Sandbox-Id': sbx.sandboxId, 'X-Access-Token': process.env.E2B_API_KEY },
  })
  await res.arrayBuffer()
  if (res.status !== 204) throw new Error(`health: ${res.status}`)
})

await measure('commands_run_echo', n, async () => {
  const r = await sbx.commands.run('echo hi')
  if (r.stdout !== 'hi\n') throw new Error(`echo hi: ${JSON.stringify(r)}`)
})

const kib = 'x'.repeat(1024)
await measure('files_write_read_1KiB', n, async (i) => {
  await sbx.files.write(`/home/user/bench/${i % 16}.txt`, kib)
  const back = await sbx.files.read(`/home/user/bench/${i % 16}.txt`)
  if (back.length !== 1024) throw new Error(`read ${back.length} bytes`)
})

// The two halves apart.
await measure('files_write_1KiB', n, async (i) => {
  await sbx.files.write(`/home/user/bench/${i % 16}.txt`, kib)
})
await measure('files_read_1KiB', n, async (i) => {
  const back = await sbx.files.read(`/home/user/bench/${i % 16}.txt`)
  if (back.length !== 1024) throw new Error(`read ${back.length} bytes`)
})

await sbx.kill()
console.log(JSON.stringify({ step: 'done', ok: true }))
