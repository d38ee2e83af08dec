/**
 * Where a process's main thread went, from a `node --cpu-prof` profile: self time by function
 * and by where it lives (a package, a source file of ours, the garbage collector...), limited to
 * a window when one is given.
 *
 *   npx tsx test/bench/profile-summary.ts DIR|FILE.cpuprofile [--top N] [--all | --idle]
 *
 * The send benchmark (BENCH_CPU_PROF=DIR) writes `window.json` beside the profile: the measured
 * window in the monotonic clock the profile's timestamps use, so that provisioning and warm-up
 * are left out; `--idle` takes the window before, in which the numbers were linked and nothing was
 * sent; `--all` takes the whole profile. Idle time is not counted in the shares.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs"
import { join } from "node:path"

interface Node {
  readonly id: number
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number }
}
interface Profile {
  readonly nodes: ReadonlyArray<Node>
  readonly startTime: number
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
}

const args = process.argv.slice(2)
const target = args.find((a) => !a.startsWith("--"))
if (target === undefined) {
  console.error("usage: profile-summary DIR|FILE.cpuprofile [--top N] [--all | --idle]")
  process.exit(2)
}
const top = Number(args[args.indexOf("--top") + 1] ?? 40) || 40
const dir = statSync(target).isDirectory() ? target : join(target, "..")
// The largest profile of a directory is the gateway's main thread (workers are nearly idle).
const file = statSync(target).isDirectory()
  ? readdirSync(target)
    .filter((f) => f.endsWith(".cpuprofile"))
    .map((f) => join(target, f))
    .sort((a, b) => statSync(b).size - statSync(a).size)[0]
  : target
const windowFile = join(dir, "window.json")
interface Window {
  readonly startUs: number
  readonly endUs: number
}
const windows = !args.includes("--all") && existsSync(windowFile)
  ? JSON.parse(readFileSync(windowFile, "utf8")) as Window & { readonly idle?: Window }
  : undefined
// `--idle`: the window in which the numbers were linked and nothing was sent.
const window = args.includes("--idle") ? windows?.idle : windows

const profile = JSON.parse(readFileSync(file, "utf8")) as Profile
const byId = new Map(profile.nodes.map((n) => [n.id, n]))

const shortUrl = (url: string) =>
  url.replace(/.*node_modules\//, "nm/").replace(/^file:\/\/.*?\/(packages|apps|test)\//, "$1/")

/** Where a function lives, for the by-place table. */
const place = (node: Node): string => {
  const { functionName, url } = node.callFrame
  if (url === "") {
    if (functionName === "(garbage collector)") return "garbage collection"
    if (functionName === "(idle)" || functionName === "(program)") return functionName
    if (functionName === "writev" || functionName === "writeBuffer" || functionName === "writeUtf8String") {
      return "socket writes"
    }
    return "native"
  }
  const short = shortUrl(url)
  if (short.startsWith("nm/")) {
    const parts = short.split("/")
    const pkg = parts[1].startsWith("@") ? `${parts[1]}/${parts[2]}` : parts[1]
    if (pkg === "effect") {
      const module = parts[parts.length - 1].replace(/\.js$/, "")
      return `effect (${module})`
    }
    return pkg
  }
  if (short.startsWith("node:")) return "node"
  return short.replace(/:\d+$/, "")
}

const self = new Map<string, number>()
const byPlace = new Map<string, number>()
let t = profile.startTime
let total = 0
let idle = 0
let from = Number.POSITIVE_INFINITY
let to = 0
for (let i = 0; i < profile.samples.length; i++) {
  const delta = profile.timeDeltas[i] ?? 0
  t += delta
  if (window !== undefined && (t < window.startUs || t > window.endUs)) continue
  from = Math.min(from, t)
  to = Math.max(to, t)
  const node = byId.get(profile.samples[i])!
  const where = place(node)
  if (where === "(idle)") {
    idle += delta
    continue
  }
  total += delta
  const name = `${node.callFrame.functionName || "(anonymous)"} ${shortUrl(node.callFrame.url)}:${node.callFrame.lineNumber}`
  self.set(name, (self.get(name) ?? 0) + delta)
  byPlace.set(where, (byPlace.get(where) ?? 0) + delta)
}

const share = (v: number) => `${(100 * v / total).toFixed(1).padStart(5)}%`
console.log(`${file}`)
console.log(
  window === undefined
    ? "whole profile"
    : `window ${((window.endUs - window.startUs) / 1e6).toFixed(1)} s (samples ${((to - from) / 1e6).toFixed(1)} s)`
)
console.log(`busy ${(total / 1000).toFixed(0)} ms, idle ${(idle / 1000).toFixed(0)} ms`)
console.log("--- self time by function")
for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(share(v), k)
console.log("--- by place")
for (const [k, v] of [...byPlace].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(share(v), k)
const effect = [...byPlace].filter(([k]) => k.startsWith("effect (")).reduce((s, [, v]) => s + v, 0)
console.log("--- groups")
console.log(share(effect), "effect (the fiber runtime and its data types)")
const ours = [...byPlace].filter(([k]) => /^(packages|apps)\//.test(k)).reduce((s, [, v]) => s + v, 0)
console.log(share(ours), "our code (packages/, apps/)")
