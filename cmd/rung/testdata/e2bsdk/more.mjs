// The E2B SDK's calls beyond the everyday ones (smoke.mjs), as cmd/rung's
// TestE2BSDK runs them: watching directories, snapshots, fork, pause,
// network settings, signed /files URLs, getHost (RUNG_PREVIEW_URL is the daemon's API, whose
// preview domain is preview.test), file metadata, auto-pause, a kill while a command runs. Same environment and output as
// smoke.mjs: one JSON line per step, {"step", "ok", "error",
// "data"}, ending with the step "done".
import http from 'node:http'
import { check, report, sdk } from './steps.mjs'

const { ALL_TRAFFIC, Sandbox, FilesystemEventType, InvalidArgumentError, NotFoundError } = sdk

// waitFor resolves when pred holds for the events seen so far, checked
// as each one arrives (the test's own timeout catches a hang).
function collector() {
  const seen = []
  let wake = () => {}
  return {
    seen,
    onEvent: (e) => { seen.push(e); wake() },
    waitFor: (pred) => new Promise((resolve) => {
      const test = () => { if (pred(seen)) resolve(seen); else wake = test }
      test()
    }),
  }
}

let sbx
if (!(await check('create', async () => {
  sbx = await Sandbox.create('base', { timeoutMs: 300_000 })
  return [typeof sbx.sandboxId === 'string', sbx.sandboxId]
}))) {
  process.exit(1)
}

await check('watchDir sees commands.run and files.write', async () => {
  await sbx.files.makeDir('/home/user/w')
  const c = collector()
  const h = await sbx.files.watchDir('/home/user/w', c.onEvent)
  await sbx.commands.run('echo from-cmd > /home/user/w/cmd.txt')
  await sbx.files.write('/home/user/w/sdk.txt', 'from the SDK')
  await sbx.files.remove('/home/user/w/cmd.txt')
  const has = (seen, name, type) => seen.some((e) => e.name === name && e.type === type)
  await c.waitFor((seen) => has(seen, 'cmd.txt', FilesystemEventType.CREATE) && has(seen, 'cmd.txt', FilesystemEventType.WRITE) &&
    has(seen, 'sdk.txt', FilesystemEventType.WRITE) && has(seen, 'cmd.txt', FilesystemEventType.REMOVE))
  await h.stop()
  return [true, c.seen]
})

await check('watchDir recursive with entries', async () => {
  const c = collector()
  const h = await sbx.files.watchDir('/home/user/w', c.onEvent, { recursive: true, includeEntry: true })
  await sbx.commands.run('mkdir -p /home/user/w/a/b && echo deep > /home/user/w/a/b/deep.txt')
  // The directories are new: the file may be written before their
  // watches are in place, and then it is reported created, not written.
  const deep = (e) => e.name === 'a/b/deep.txt' && (e.type === FilesystemEventType.WRITE || e.type === FilesystemEventType.CREATE)
  const seen = await c.waitFor((seen) => seen.some(deep))
  await h.stop()
  const ev = seen.find(deep)
  return [ev.entry?.path === '/home/user/w/a/b/deep.txt' && ev.entry?.type === 'file', seen]
})

await check('watchDir of a missing directory', async () => {
  try {
    await sbx.files.watchDir('/home/user/nope', () => {})
    return [false, 'no error']
  } catch (e) {
    return [e instanceof NotFoundError, { name: e?.name, message: e?.message }]
  }
})

await check('watchDir outside what rung watches', async () => {
  try {
    await sbx.files.watchDir('/etc', () => {})
    return [false, 'no error']
  } catch (e) {
    return [e instanceof InvalidArgumentError && /rung watches/.test(e.message), { name: e?.name, message: e?.message }]
  }
})

const snapName = `more-${process.pid}-${Date.now()}`
let snap
await check('createSnapshot and create from it', async () => {
  await sbx.files.write('/home/user/snap.txt', 'v1')
  snap = await sbx.createSnapshot({ name: snapName })
  await sbx.files.write('/home/user/snap.txt', 'v2')
  const from = await Sandbox.create(snap.snapshotId, { timeoutMs: 60_000 })
  const text = await from.files.read('/home/user/snap.txt')
  const r = await from.commands.run('cat /home/user/snap.txt')
  await from.kill()
  return [typeof snap.snapshotId === 'string' && snap.names.includes(snapName) && text === 'v1' && r.stdout === 'v1', { snap, text, stdout: r.stdout }]
})

await check('listSnapshots', async () => {
  const all = []
  const p = Sandbox.listSnapshots({ sandboxId: sbx.sandboxId, limit: 1 })
  while (p.hasNext) all.push(...(await p.nextItems()))
  const none = await Sandbox.listSnapshots({ sandboxId: 'sbx_nope' }).nextItems()
  return [all.some((s) => s.snapshotId === snap?.snapshotId) && none.length === 0, { all, none }]
})

await check('deleteSnapshot', async () => {
  const first = await Sandbox.deleteSnapshot(snap.snapshotId)
  const again = await Sandbox.deleteSnapshot(snap.snapshotId)
  let created
  try {
    await Sandbox.create(snap.snapshotId)
    created = 'created'
  } catch (e) {
    created = e?.name
  }
  return [first === true && again === false && created !== 'created', { first, again, created }]
})

await check('fork', async () => {
  await sbx.files.write('/home/user/fork.txt', 'parent')
  const forks = await sbx.fork({ count: 2, timeoutMs: 60_000 })
  const ok = forks.every((f) => f instanceof Sandbox)
  const reads = []
  if (ok) {
    await forks[0].files.write('/home/user/fork.txt', 'child 0')
    for (const f of forks) reads.push((await f.commands.run('cat /home/user/fork.txt')).stdout)
    reads.push(await sbx.files.read('/home/user/fork.txt'))
    const ids = new Set([sbx.sandboxId, ...forks.map((f) => f.sandboxId)])
    await Promise.all(forks.map((f) => f.kill()))
    return [ids.size === 3 && reads.join('|') === 'child 0|parent|parent', { reads }]
  }
  return [false, forks.map((f) => `${f?.name}: ${f?.message}`)]
})

await check('pause and connect', async () => {
  await sbx.files.write('/home/user/kept.txt', 'kept')
  const first = await sbx.pause()
  const again = await sbx.pause()
  const info = await sbx.getInfo()
  const running = await sbx.isRunning()
  const listed = (await Sandbox.list({ query: { state: ['paused'] } }).nextItems()).some((s) => s.sandboxId === sbx.sandboxId)
  await sbx.connect()
  const after = await sbx.getInfo()
  const r = await sbx.commands.run('cat /home/user/kept.txt')
  return [first === true && again === false && info.state === 'paused' && !running && listed && after.state === 'running' && r.stdout === 'kept',
    { first, again, state: info.state, running, listed, after: after.state, stdout: r.stdout }]
})

await check('network at create and update', async () => {
  const closed = await Sandbox.create('base', { allowInternetAccess: false, timeoutMs: 60_000 })
  const r = await closed.commands.run('echo still runs')
  await closed.updateNetwork({ denyOut: [ALL_TRAFFIC] })
  let bad
  try {
    await closed.updateNetwork({ allowOut: ['example.com'] })
    bad = 'accepted'
  } catch (e) {
    bad = e?.name
  }
  await closed.kill()
  return [r.stdout === 'still runs\n' && bad === 'SandboxError', { stdout: r.stdout, bad }]
})

await check('getHost reaches a server in the sandbox', async () => {
  await sbx.files.write('/home/user/www/hi.txt', 'served')
  await sbx.commands.run('cd /home/user/www && exec python3 -m http.server 8123', { background: true })
  // Wait, inside the sandbox, for the server to listen.
  await sbx.commands.run('for i in $(seq 200); do (echo > /dev/tcp/127.0.0.1/8123) 2>/dev/null && exit 0; sleep 0.05; done; exit 1')
  const host = sbx.getHost(8123)
  const { status, body } = await new Promise((resolve, reject) => {
    const req = http.request(process.env.RUNG_PREVIEW_URL + '/hi.txt', { headers: { Host: host, Authorization: `Bearer ${process.env.E2B_API_KEY}` } }, (res) => {
      let body = ''
      res.on('data', (d) => { body += d })
      res.on('end', () => resolve({ status: res.statusCode, body }))
    })
    req.on('error', reject)
    req.end()
  })
  return [host === `8123-${sbx.sandboxId}.preview.test` && status === 200 && body === 'served', { host, status, body }]
})

// allowPublicTraffic false: create answers a traffic access token, which
// opens the sandbox's ports as E2B's E2b-Traffic-Access-Token header
// (a wrong one is 403, none at all 401), and which the server inside
// never sees; nor an E2B key that authenticated the request.
await check('traffic access token opens the ports', async () => {
  const priv = await Sandbox.create('base', { timeoutMs: 300_000, network: { allowPublicTraffic: false } })
  try {
    const echo = "import http.server as h\n" +
      "class E(h.BaseHTTPRequestHandler):\n" +
      "  def do_GET(self):\n" +
      "    b = str(self.headers).encode(); self.send_response(200); self.send_header('Content-Length', str(len(b))); self.end_headers(); self.wfile.write(b)\n" +
      "h.HTTPServer(('127.0.0.1', 8124), E).serve_forever()\n"
    await priv.files.write('/home/user/echo.py', echo)
    await priv.commands.run('exec python3 /home/user/echo.py', { background: true })
    await priv.commands.run('for i in $(seq 200); do (echo > /dev/tcp/127.0.0.1/8124) 2>/dev/null && exit 0; sleep 0.05; done; exit 1')
    const get = (headers) => new Promise((resolve, reject) => {
      const req = http.request(process.env.RUNG_PREVIEW_URL + '/', { headers: { Host: priv.getHost(8124), ...headers } }, (res) => {
        let body = ''
        res.on('data', (d) => { body += d })
        res.on('end', () => resolve({ status: res.statusCode, body }))
      })
      req.on('error', reject)
      req.end()
    })
    const tok = priv.trafficAccessToken
    const good = await get({ 'E2b-Traffic-Access-Token': tok })
    const forged = await get({ 'E2b-Traffic-Access-Token': tok.slice(0, -1) + (tok.endsWith('a') ? 'b' : 'a') })
    const none = await get({})
    const otherSbx = await get({ 'E2b-Traffic-Access-Token': tok, Host: `8124-${sbx.sandboxId}.preview.test` })
    const byKey = await get({ Authorization: `Bearer ${process.env.E2B_API_KEY}` })
    const seen = (good.body + byKey.body).toLowerCase()
    const leaked = seen.includes('traffic-access-token') || seen.includes(tok.toLowerCase()) || seen.includes(process.env.E2B_API_KEY.toLowerCase())
    const public_ = sbx.trafficAccessToken
    return [typeof tok === 'string' && tok.startsWith('ta_') && good.status === 200 && good.body.includes('Host:') &&
      forged.status === 403 && none.status === 401 && otherSbx.status === 403 && byKey.status === 200 && !leaked && public_ === undefined,
    { tok: typeof tok, good: good.status, forged: forged.status, none: none.status, otherSbx: otherSbx.status, byKey: byKey.status, leaked, public_, body: good.body }]
  } finally {
    await priv.kill()
  }
})

await check('signed upload and download URLs', async () => {
  await sbx.files.write('/home/user/signed.txt', 'signed content')
  const dl = await sbx.downloadUrl('/home/user/signed.txt')
  const got = await (await fetch(dl)).text()
  const up = await sbx.uploadUrl('/home/user/up.txt')
  const form = new FormData()
  form.append('file', new Blob(['uploaded']), 'up.txt')
  const upStatus = (await fetch(up, { method: 'POST', body: form })).status
  const back = await sbx.files.read('/home/user/up.txt')
  const fresh = (await fetch(await sbx.downloadUrl('/home/user/signed.txt', { useSignatureExpiration: 120 }))).status
  const expired = (await fetch(await sbx.downloadUrl('/home/user/signed.txt', { useSignatureExpiration: -10 }))).status
  const forged = new URL(dl)
  forged.searchParams.set('signature', 'v1_' + 'A'.repeat(43))
  const forgedStatus = (await fetch(forged)).status
  const moved = new URL(dl)
  moved.searchParams.set('path', '/home/user/up.txt')
  const movedStatus = (await fetch(moved)).status
  const readAsWrite = (await fetch(dl, { method: 'POST', body: form })).status
  const seen = { got, upStatus, back, fresh, expired, forgedStatus, movedStatus, readAsWrite }
  return [got === 'signed content' && upStatus === 200 && back === 'uploaded' && fresh === 200 && expired === 401 &&
    forgedStatus === 401 && movedStatus === 401 && readAsWrite === 401, seen]
})

await check('file metadata (X-Metadata-* as user.e2b.* xattrs)', async () => {
  const md = { author: 'mish', purpose: 'upload' }
  const w = await sbx.files.write('/home/user/md/a.txt', 'a', { metadata: md })
  const o = await sbx.files.write('/home/user/md/b.txt', 'b', { metadata: md, useOctetStream: true })
  const info = await sbx.files.getInfo('/home/user/md/a.txt')
  const listed = (await sbx.files.list('/home/user/md')).find((e) => e.name === 'b.txt')
  const moved = await sbx.files.rename('/home/user/md/b.txt', '/home/user/md/c.txt')
  // Set from inside the sandbox, read through envd.
  await sbx.commands.run(`python3 -c "import os; os.setxattr('/home/user/md/a.txt', 'user.e2b.extra', b'x')"`)
  const inside = await sbx.files.getInfo('/home/user/md/a.txt')
  // An upload without metadata clears it.
  const cleared = await sbx.files.write('/home/user/md/a.txt', 'again')
  const after = await sbx.files.getInfo('/home/user/md/a.txt')
  const sorted = (m) => m && JSON.stringify(Object.fromEntries(Object.entries(m).sort()))
  const same = (a) => sorted(a) === sorted(md)
  const seen = { w: w.metadata, o: o.metadata, info: info.metadata, listed: listed?.metadata, moved: moved.metadata, inside: inside.metadata, cleared: cleared.metadata, after: after.metadata }
  return [same(w.metadata) && same(o.metadata) && same(info.metadata) && same(listed?.metadata) && same(moved.metadata) &&
    sorted(inside.metadata) === sorted({ ...md, extra: 'x' }) && cleared.metadata === undefined && after.metadata === undefined, seen]
})

await check('expired signature: envd\'s 401 body', async () => {
  const res = await fetch(await sbx.downloadUrl('/home/user/signed.txt', { useSignatureExpiration: -10_000 }))
  const body = await res.text()
  return [res.status === 401 && body.trim() === '{"code":401,"message":"signature is already expired"}', { status: res.status, body }]
})

await check('auto-pause at the timeout (filesystem-only), connect resumes', async () => {
  let memory
  try {
    await Sandbox.create('base', { timeoutMs: 2_000, lifecycle: { onTimeout: 'pause' } })
    memory = 'accepted'
  } catch (e) {
    memory = `${e?.name}: ${e?.message}`
  }
  const p = await Sandbox.create('base', { timeoutMs: 2_000, lifecycle: { onTimeout: { action: 'pause', keepMemory: false } } })
  try {
    await p.files.write('/home/user/marker.txt', 'kept')
    const onTimeout = (await p.getInfo()).lifecycle?.onTimeout
    // Wait for the pause itself (the test's timeout catches a hang).
    let state
    while ((state = (await p.getInfo()).state) !== 'paused') await new Promise((r) => setTimeout(r, 200))
    const runningWhilePaused = await p.isRunning()
    await p.connect({ timeoutMs: 60_000 })
    const after = (await p.getInfo()).state
    const marker = await p.files.read('/home/user/marker.txt')
    const seen = { memory, onTimeout, state, runningWhilePaused, after, marker }
    return [/auto-pause that keeps memory is not available/.test(memory) && onTimeout === 'pause' && !runningWhilePaused &&
      after === 'running' && marker === 'kept', seen]
  } finally {
    await p.kill()
  }
})

await check('kill while a command runs: its stream is cut (TimeoutError)', async () => {
  const cmd = await sbx.commands.run('sleep 60', { background: true })
  const killed = await sbx.kill()
  const err = await cmd.wait().then(() => undefined, (e) => e)
  return [killed && err?.name === 'TimeoutError' && /sandbox was killed or reached its end of life/.test(err.message),
    { killed, name: err?.name, message: err?.message }]
})

report('done', true)
