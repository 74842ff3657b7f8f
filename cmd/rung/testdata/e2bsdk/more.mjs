// The E2B SDK's calls beyond the everyday ones (smoke.mjs), as cmd/rung's
// TestE2BSDK runs them: watching directories. Same environment and
// output as smoke.mjs: one JSON line per step, {"step", "ok", "error",
// "data"}, ending with the step "done".
import { createRequire } from 'node:module'
import path from 'node:path'

const require = createRequire(path.join(process.env.RUNG_E2B_SDK, 'package.json'))
const { Sandbox, FilesystemEventType, InvalidArgumentError, NotFoundError } = require('e2b')

function report(step, ok, error, data) {
  console.log(JSON.stringify({ step, ok, error, data }))
}

async function check(step, fn) {
  try {
    const [ok, data] = await fn()
    report(step, ok, ok ? undefined : 'unexpected result', data)
    return ok
  } catch (e) {
    report(step, false, `${e?.name}: ${e?.message}`)
    return false
  }
}

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

await check('kill', async () => [await sbx.kill(), null])

report('done', true)
