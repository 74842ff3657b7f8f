// What smoke.mjs and more.mjs share: the pinned SDK (RUNG_E2B_SDK is the
// directory whose node_modules holds it) and their output, one JSON line
// per step, {"step", "ok", "error", "data"}.
import { createRequire } from 'node:module'
import path from 'node:path'

export const sdk = createRequire(path.join(process.env.RUNG_E2B_SDK, 'package.json'))('e2b')

export function report(step, ok, error, data) {
  console.log(JSON.stringify({ step, ok, error, data }))
}

// check runs fn and reports it: fn returns [ok, what it saw].
export async function check(step, fn) {
  try {
    const [ok, data] = await fn()
    report(step, ok, ok ? undefined : 'unexpected result', data)
    return ok
  } catch (e) {
    report(step, false, `${e?.name}: ${e?.message}`)
    return false
  }
}
