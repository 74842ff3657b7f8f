// What the scripts here share: the pinned SDK (RUNG_E2B_SDK is the
// directory whose node_modules holds it) and their output, one JSON line
// per step, {"step", "ok", "error", "data"}; for bench.mjs and floor.mjs,
// measure and its iteration count.
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

// benchN is the iterations of each measure (RUNG_BENCH_N, default 200).
export const benchN = Number(process.env.RUNG_BENCH_N || 200)

// quantiles sorts ms and returns its count, median and 99th percentile.
export function quantiles(ms) {
  ms.sort((a, b) => a - b)
  const at = (q) => ms[Math.min(ms.length - 1, Math.floor(q * ms.length))]
  return { n: ms.length, p50_ms: at(0.5), p99_ms: at(0.99) }
}

// measure times count calls of fn(i), one after another, and reports
// their quantiles as step's data.
export async function measure(step, count, fn) {
  const ms = []
  for (let i = 0; i < count; i++) {
    const t0 = performance.now()
    await fn(i)
    ms.push(performance.now() - t0)
  }
  report(step, true, undefined, quantiles(ms))
}
