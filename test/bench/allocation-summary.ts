/**
 * What a process allocated, from a `.heapprofile` of V8's sampling heap profiler that counted
 * freed objects too (the send benchmark's BENCH_ALLOC_PROF=FILE, over its measured window): the
 * bytes in all, a send's share when `--sends N` is given, and the bytes by allocating function and
 * by the nearest function of ours on the stack (the fiber runtime's trampolines hide most callers).
 *
 *   npx tsx test/bench/allocation-summary.ts FILE [--sends N] [--top N]
 */
import { readFileSync } from "node:fs"

interface Frame {
  readonly functionName: string
  readonly url: string
  readonly lineNumber: number
}
interface Node {
  readonly id: number
  readonly callFrame: Frame
  readonly children: ReadonlyArray<Node>
}
interface Profile {
  readonly head: Node
  readonly samples: ReadonlyArray<{ readonly nodeId: number; readonly size: number }>
}

const args = process.argv.slice(2)
const file = args.find((a, i) => !a.startsWith("--") && !args[i - 1]?.startsWith("--"))
if (file === undefined) {
  console.error("usage: allocation-summary FILE [--sends N] [--top N]")
  process.exit(2)
}
const option = (name: string) => (args.includes(name) ? Number(args[args.indexOf(name) + 1]) : undefined)
const sends = option("--sends")
const top = option("--top") ?? 30

const profile = JSON.parse(readFileSync(file, "utf8")) as Profile
const nodes = new Map<number, Node>()
const parents = new Map<number, number>()
const visit = (node: Node) => {
  nodes.set(node.id, node)
  for (const child of node.children) {
    parents.set(child.id, node.id)
    visit(child)
  }
}
visit(profile.head)

const root = process.cwd()
const place = (f: Frame) => f.url.replace(`file://${root}/`, "").replace("node_modules/", "")
const label = (f: Frame) => `${f.functionName || "(anonymous)"} ${place(f)}:${f.lineNumber + 1}`
const ours = (f: Frame) => /^(packages|apps)\//.test(place(f))

const bySelf = new Map<string, number>()
const byOurs = new Map<string, number>()
let total = 0
for (const { nodeId, size } of profile.samples) {
  total += size
  const frame = nodes.get(nodeId)!.callFrame
  bySelf.set(label(frame), (bySelf.get(label(frame)) ?? 0) + size)
  let at: number | undefined = nodeId
  while (at !== undefined && !ours(nodes.get(at)!.callFrame)) at = parents.get(at)
  const owner = at === undefined ? "(no function of ours on the stack)" : label(nodes.get(at)!.callFrame)
  byOurs.set(owner, (byOurs.get(owner) ?? 0) + size)
}

const mb = (bytes: number) => (bytes / 1e6).toFixed(1).padStart(8)
const print = (title: string, counts: Map<string, number>) => {
  console.log(`--- ${title}`)
  for (const [name, bytes] of [...counts].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    console.log(`${mb(bytes)} MB ${(100 * bytes / total).toFixed(1).padStart(5)}%  ${name}`)
  }
}
console.log(`${(total / 1e6).toFixed(1)} MB allocated${sends ? `, ${(total / sends / 1e3).toFixed(0)} KB a send (${sends} sends)` : ""}`)
print("by allocating function", bySelf)
print("by the nearest function of ours", byOurs)
