// The E2B SDK's own cost for the calls bench.mjs times, as cmd/rung's
// BenchmarkE2BSDKFloor runs it: E2B_SANDBOX_URL points the SDK at a
// server that answers every call at once with fixed bytes (no sandbox,
// no file, no command behind it), so what is left is the client's time:
// the SDK, undici and Node's event loop, and one loopback round trip.
// bench.mjs's figures less these are what rung adds. The sandbox is
// connected in the SDK's debug mode, which asks no control plane.
// Prints one JSON line per measure, as bench.mjs does.
import { benchN as n, measure, sdk } from './steps.mjs'

const { Sandbox } = sdk

const sbx = await Sandbox.connect('floor', { debug: true })
const kib = 'x'.repeat(1024)
const run = async () => {
  const r = await sbx.commands.run('echo hi')
  if (r.stdout !== 'hi\n') throw new Error(`echo hi: ${JSON.stringify(r)}`)
}
const write = (i) => sbx.files.write(`/home/user/bench/${i % 16}.txt`, kib)
const read = async (i) => {
  const back = await sbx.files.read(`/home/user/bench/${i % 16}.txt`)
  if (back.length !== 1024) throw new Error(`read ${back.length} bytes`)
}

// The same warm-up as bench.mjs's: V8 compiles the SDK's paths first.
for (let j = 0; j < 300; j++) {
  await run()
  await sbx.isRunning()
  await write(j)
  await read(j)
}

await measure('is_running', n, async () => {
  if (!(await sbx.isRunning())) throw new Error('not running')
})
await measure('commands_run_echo', n, run)
await measure('files_write_read_1KiB', n, async (i) => {
  await write(i)
  await read(i)
})
await measure('files_write_1KiB', n, write)
await measure('files_read_1KiB', n, read)
console.log(JSON.stringify({ step: 'done', ok: true }))
