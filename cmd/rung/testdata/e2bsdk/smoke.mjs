// The E2B SDK's everyday calls against rung, as cmd/rung's TestE2BSDK
// runs them: E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY point the SDK
// at the daemon, RUNG_E2B_SDK is the directory whose node_modules holds
// the pinned SDK. Each step prints one JSON line, {"step", "ok", "error",
// "data"}; the script goes on after a failed step when it can, and ends
// with the step "done".
import { check, report, sdk } from './steps.mjs'

const { Sandbox, CommandExitError, NotFoundError } = sdk

let sbx
if (!(await check('create', async () => {
  sbx = await Sandbox.create('base', { timeoutMs: 300_000, metadata: { suite: 'smoke' } })
  return [typeof sbx.sandboxId === 'string' && sbx.sandboxId.length > 0, sbx.sandboxId]
}))) {
  process.exit(1)
}

await check('run echo', async () => {
  const r = await sbx.commands.run('echo hi')
  return [r.exitCode === 0 && r.stdout === 'hi\n' && r.stderr === '', r]
})

await check('run in the home', async () => {
  const r = await sbx.commands.run('pwd; echo "$HOME"; id -un')
  return [r.stdout === '/home/user\n/home/user\nuser\n', r]
})

await check('run with envs and cwd', async () => {
  const r = await sbx.commands.run('echo "$FOO" && pwd', { envs: { FOO: 'bar' }, cwd: '/tmp' })
  return [r.stdout === 'bar\n/tmp\n', r]
})

await check('run streams output', async () => {
  const seen = []
  const r = await sbx.commands.run('echo one; echo two >&2', { onStdout: (d) => seen.push(['out', d]), onStderr: (d) => seen.push(['err', d]) })
  const out = seen.filter(([k]) => k === 'out').map(([, d]) => d).join('')
  const err = seen.filter(([k]) => k === 'err').map(([, d]) => d).join('')
  return [out === 'one\n' && err === 'two\n' && r.stdout === 'one\n' && r.stderr === 'two\n', { seen, r }]
})

await check('run exit 3 throws CommandExitError', async () => {
  try {
    await sbx.commands.run('echo bad >&2; exit 3')
    return [false, 'no error']
  } catch (e) {
    return [e instanceof CommandExitError && e.exitCode === 3 && e.stderr === 'bad\n', { name: e?.name, exitCode: e?.exitCode, stderr: e?.stderr, message: e?.message }]
  }
})

await check('files write and read', async () => {
  const info = await sbx.files.write('/home/user/notes/a.txt', 'hello rung\n')
  const text = await sbx.files.read('/home/user/notes/a.txt')
  const rel = await sbx.files.read('notes/a.txt')
  const bytes = await sbx.files.read('/home/user/notes/a.txt', { format: 'bytes' })
  return [info.path === '/home/user/notes/a.txt' && info.name === 'a.txt' && text === 'hello rung\n' && rel === text && bytes.length === 11, { info, text }]
})

await check('files written are seen by commands', async () => {
  await sbx.files.write('b.txt', 'from the SDK')
  const r = await sbx.commands.run('cat /home/user/b.txt; cat b.txt')
  return [r.stdout === 'from the SDKfrom the SDK', r]
})

await check('files read of a missing file', async () => {
  try {
    await sbx.files.read('/home/user/nope.txt')
    return [false, 'no error']
  } catch (e) {
    return [e instanceof NotFoundError, { name: e?.name, message: e?.message }]
  }
})

await check('files list', async () => {
  await sbx.files.makeDir('/home/user/notes/sub')
  const entries = await sbx.files.list('/home/user/notes')
  const names = entries.map((e) => `${e.name}:${e.type}`).sort()
  const a = entries.find((e) => e.name === 'a.txt')
  return [names.join(',') === 'a.txt:file,sub:dir' && a.path === '/home/user/notes/a.txt' && a.size === 11 && a.owner === 'user', entries]
})

await check('files exists, getInfo, rename, remove', async () => {
  const before = await sbx.files.exists('/home/user/notes/a.txt')
  const info = await sbx.files.getInfo('/home/user/notes/a.txt')
  const moved = await sbx.files.rename('/home/user/notes/a.txt', '/home/user/notes/c.txt')
  await sbx.files.remove('/home/user/notes/c.txt')
  const after = await sbx.files.exists('/home/user/notes/c.txt')
  return [before && info.type === 'file' && moved.path === '/home/user/notes/c.txt' && !after, { info, moved }]
})

await check('writeFiles keeps each path', async () => {
  const infos = await sbx.files.write([
    { path: 'wf/nested/a.txt', data: 'a' },
    { path: '/tmp/wf-b.txt', data: 'b' },
  ])
  const a = await sbx.files.read('/home/user/wf/nested/a.txt')
  const b = await sbx.files.read('/tmp/wf-b.txt')
  const paths = infos.map((i) => i.path)
  return [paths[0] === '/home/user/wf/nested/a.txt' && paths[1] === '/tmp/wf-b.txt' && a === 'a' && b === 'b', { paths, a, b }]
})

await check('remove of a missing file succeeds', async () => {
  await sbx.files.remove('never-there.txt')
  return [true, null]
})

await check('getInfo of a symlink gives its absolute target', async () => {
  await sbx.files.write('target.txt', 't')
  await sbx.commands.run('ln -s target.txt link.txt')
  const info = await sbx.files.getInfo('link.txt')
  return [info.type === 'symlink' && info.symlinkTarget === '/home/user/target.txt', info]
})

await check('background command and its kill', async () => {
  const h = await sbx.commands.run('sleep 600', { background: true })
  const listed = (await sbx.commands.list()).some((p) => p.pid === h.pid)
  const killed = await h.kill()
  let ended
  try {
    await h.wait()
    ended = 'exited 0'
  } catch (e) {
    ended = e instanceof CommandExitError ? 'killed' : `${e?.name}: ${e?.message}`
  }
  const gone = !(await sbx.commands.list()).some((p) => p.pid === h.pid)
  const again = await sbx.commands.kill(h.pid)
  return [listed && killed && ended === 'killed' && gone, { pid: h.pid, listed, killed, ended, gone, again }]
})

await check('background command with stdin', async () => {
  const h = await sbx.commands.run('cat', { background: true, stdin: true })
  await h.sendStdin('line one\n')
  await h.sendStdin('line two\n')
  await h.closeStdin()
  const r = await h.wait()
  return [r.exitCode === 0 && r.stdout === 'line one\nline two\n', r]
})

await check('kill a command waiting for stdin', async () => {
  const h = await sbx.commands.run('sleep 600', { background: true, stdin: true })
  await h.sendStdin('ignored\n')
  const killed = await h.kill()
  let ended
  try {
    await h.wait()
    ended = 'exited 0'
  } catch (e) {
    ended = e instanceof CommandExitError ? 'killed' : `${e?.name}: ${e?.message}`
  }
  let late
  try {
    await h.sendStdin('late\n')
    late = 'accepted'
  } catch (e) {
    late = e?.name
  }
  return [killed && ended === 'killed' && late !== 'accepted', { killed, ended, late }]
})

await check('connect to a running command', async () => {
  const h = await sbx.commands.run('read x; echo "got $x"', { background: true, stdin: true })
  const c = await sbx.commands.connect(h.pid)
  await sbx.commands.sendStdin(h.pid, 'it\n')
  const r = await c.wait()
  return [r.stdout === 'got it\n', r]
})

await check('connect does not shorten the timeout', async () => {
  const before = (await sbx.getInfo()).endAt.getTime()
  await Sandbox.connect(sbx.sandboxId, { timeoutMs: 10_000 })
  const after = (await sbx.getInfo()).endAt.getTime()
  return [after === before, { before, after }]
})

await check('connect extends the timeout', async () => {
  const before = (await sbx.getInfo()).endAt.getTime()
  await Sandbox.connect(sbx.sandboxId, { timeoutMs: 600_000 })
  const after = (await sbx.getInfo()).endAt.getTime()
  return [after > before, { before, after }]
})

// A pause keeps the files, not the processes: the resume boots anew,
// with a boot id of its own (the SDK's filesystem-only resume test).
await check('pause, then connect resumes', async () => {
  const bootId = async (s) => (await s.commands.run('cat /proc/sys/kernel/random/boot_id')).stdout.trim()
  const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/
  await sbx.files.write('kept.txt', 'kept')
  const bootBefore = await bootId(sbx)
  await sbx.pause()
  const paused = await sbx.isRunning()
  const state = (await sbx.getInfo()).state
  const resumed = await Sandbox.connect(sbx.sandboxId)
  const running = await resumed.isRunning()
  const r = await resumed.commands.run('cat kept.txt')
  const bootAfter = await bootId(resumed)
  const rebooted = uuid.test(bootBefore) && uuid.test(bootAfter) && bootBefore !== bootAfter
  return [paused === false && state === 'paused' && running && r.stdout === 'kept' && rebooted,
    { paused, state, running, stdout: r.stdout, bootBefore, bootAfter }]
})

// terminal collects a PTY's output as text; until(s) resolves once the
// output holds s, and rejects after 60 s (a hang, not a timing).
function terminal() {
  const dec = new TextDecoder()
  const t = { out: '', waiters: [] }
  t.onData = (d) => {
    t.out += dec.decode(d, { stream: true })
    t.waiters = t.waiters.filter(([s, resolve]) => !(t.out.includes(s) && (resolve(), true)))
  }
  t.until = (s) => new Promise((resolve, reject) => {
    if (t.out.includes(s)) return resolve()
    t.waiters.push([s, resolve])
    setTimeout(() => reject(new Error(`no ${JSON.stringify(s)} on the terminal: ${JSON.stringify(t.out)}`)), 60_000).unref()
  })
  return t
}
const typed = (s) => new TextEncoder().encode(s)

await check('pty: create, input, resize, exit', async () => {
  const t = terminal()
  const h = await sbx.pty.create({ cols: 80, rows: 24, onData: t.onData, timeoutMs: 120_000 })
  await sbx.pty.sendInput(h.pid, typed('echo $((6*7))\n'))
  await t.until('42\r\n')
  await sbx.pty.sendInput(h.pid, typed('stty size\n'))
  await t.until('24 80\r\n')
  await sbx.pty.resize(h.pid, { cols: 132, rows: 43 })
  await sbx.pty.sendInput(h.pid, typed('stty size; tty\n'))
  await t.until('43 132\r\n/dev/pts/')
  await sbx.pty.sendInput(h.pid, typed('exit\n'))
  const r = await h.wait()
  return [r.exitCode === 0, { r, out: t.out }]
})

await check('pty: connect, kill', async () => {
  const first = terminal()
  const h = await sbx.pty.create({ cols: 100, rows: 30, onData: first.onData, timeoutMs: 120_000 })
  const t = terminal()
  const c = await sbx.pty.connect(h.pid, { onData: t.onData })
  await sbx.pty.sendInput(h.pid, typed('echo conn-$((1+1)); id -un\n'))
  await t.until('conn-2\r\nuser\r\n')
  const listed = (await sbx.commands.list()).some((p) => p.pid === h.pid)
  const killed = await sbx.pty.kill(h.pid)
  let ended
  try {
    await c.wait()
    ended = 'exited'
  } catch (e) {
    ended = e instanceof CommandExitError ? 'killed' : `${e?.name}: ${e?.message}`
  }
  const again = await sbx.pty.kill(h.pid)
  let resized
  try {
    await sbx.pty.resize(h.pid, { cols: 10, rows: 10 })
    resized = 'accepted'
  } catch (e) {
    resized = e?.name
  }
  return [listed && killed && ended === 'killed' && resized !== 'accepted', { listed, killed, ended, again, resized, out: t.out }]
})

await check('isRunning', async () => [await sbx.isRunning(), null])

await check('kill', async () => {
  const killed = await sbx.kill()
  const running = await sbx.isRunning()
  const again = await Sandbox.kill(sbx.sandboxId)
  return [killed === true && running === false && again === false, { killed, running, again }]
})

report('done', true)
