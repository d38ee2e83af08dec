/**
 * What a process's heap holds, from a V8 heap snapshot (the send benchmark's
 * BENCH_HEAP_SNAPSHOT=DIR, taken with the numbers linked and nothing sent): the self size in all
 * and by kind of object, then the groups of objects that come at least once per number (objects by
 * constructor, closures by the place in the source that made them), largest first, with their
 * size per number. A closure whose properties went to a dictionary of its own (a property
 * redefined after it was made) counts that dictionary with it.
 *
 *   NODE_OPTIONS=--max-old-space-size=8192 npx tsx test/bench/heap-summary.ts FILE [--per N] [--top N]
 */
import { readFileSync } from "node:fs"

interface Snapshot {
  readonly snapshot: {
    readonly meta: {
      readonly node_fields: ReadonlyArray<string>
      readonly node_types: readonly [ReadonlyArray<string>, ...Array<unknown>]
      readonly edge_fields: ReadonlyArray<string>
      readonly edge_types: readonly [ReadonlyArray<string>, ...Array<unknown>]
      readonly location_fields: ReadonlyArray<string>
    }
  }
  readonly nodes: ReadonlyArray<number>
  readonly edges: ReadonlyArray<number>
  readonly locations: ReadonlyArray<number>
  readonly strings: ReadonlyArray<string>
}

const args = process.argv.slice(2)
const file = args.find((a, i) => !a.startsWith("--") && !args[i - 1]?.startsWith("--"))
if (file === undefined) {
  console.error("usage: heap-summary FILE [--per N] [--top N]")
  process.exit(2)
}
const option = (name: string) => (args.includes(name) ? Number(args[args.indexOf(name) + 1]) : undefined)
const per = option("--per") ?? 1
const top = option("--top") ?? 40

const snap = JSON.parse(readFileSync(file, "utf8")) as Snapshot
const { meta } = snap.snapshot
const nodeFields = meta.node_fields.length
const [TYPE, NAME, SIZE, EDGES] = ["type", "name", "self_size", "edge_count"].map((f) => meta.node_fields.indexOf(f))
const edgeFields = meta.edge_fields.length
const [EDGE_TYPE, EDGE_NAME, EDGE_TO] = ["type", "name_or_index", "to_node"].map((f) => meta.edge_fields.indexOf(f))
const nodeTypes = meta.node_types[0]
const edgeTypes = meta.edge_types[0]
const { edges, nodes, strings } = snap
const count = nodes.length / nodeFields

const type = (n: number) => nodeTypes[nodes[n * nodeFields + TYPE]]!
const name = (n: number) => strings[nodes[n * nodeFields + NAME]]!
const size = (n: number) => nodes[n * nodeFields + SIZE]!
const firstEdge = new Uint32Array(count + 1)
for (let n = 0, e = 0; n < count; n++) {
  firstEdge[n] = e
  e += nodes[n * nodeFields + EDGES]! * edgeFields
}
firstEdge[count] = edges.length
/** The node a named edge of `n` leads to, or -1. */
const edge = (n: number, edgeName: string) => {
  for (let e = firstEdge[n]!; e < firstEdge[n + 1]!; e += edgeFields) {
    const kind = edgeTypes[edges[e + EDGE_TYPE]!]
    if (kind !== "element" && kind !== "hidden" && strings[edges[e + EDGE_NAME]!] === edgeName) return edges[e + EDGE_TO]! / nodeFields
  }
  return -1
}

const root = `file://${process.cwd()}/`
/** Where a closure's code is: its script (by its function's shared info) and the place in it. */
const places = new Map<number, string>()
const locationFields = meta.location_fields.length
for (let i = 0; i < snap.locations.length; i += locationFields) {
  const closure = snap.locations[i]! / nodeFields
  const shared = edge(closure, "shared")
  const script = shared < 0 ? -1 : Math.max(edge(shared, "script"), edge(shared, "script_or_debug_info"))
  const url = script < 0 ? "?" : name(script).replace(root, "").replace("node_modules/", "")
  places.set(closure, `${url}:${snap.locations[i + 2]! + 1}:${snap.locations[i + 3]! + 1}`)
}

const groups = new Map<string, { count: number; bytes: number }>()
const byType = new Map<string, number>()
let total = 0
for (let n = 0; n < count; n++) {
  const t = type(n)
  let bytes = size(n)
  let key = `${t} ${name(n).slice(0, 60)}`
  if (t === "closure") {
    const properties = edge(n, "properties")
    const dictionary = properties >= 0 && name(properties) === "(object properties)"
    if (dictionary) bytes += size(properties)
    key = `closure ${name(n) || "(anonymous)"} ${places.get(n) ?? "?"}${dictionary ? " [own property dictionary]" : ""}`
  } else if (t === "string" || t === "concatenated string" || t === "sliced string") {
    key = t
  }
  total += size(n)
  byType.set(t, (byType.get(t) ?? 0) + size(n))
  const group = groups.get(key) ?? { count: 0, bytes: 0 }
  group.count++
  group.bytes += bytes
  groups.set(key, group)
}

const mib = (bytes: number) => `${(bytes / 1048576).toFixed(1)} MiB`
console.log(`${file}: ${count} objects, ${mib(total)}`)
console.log(`by kind: ${[...byType].sort((a, b) => b[1] - a[1]).map(([t, b]) => `${t} ${mib(b)}`).join(", ")}`)
console.log(`\ngroups of at least ${per} objects, largest first (size per ${per === 1 ? "process" : `one of ${per}`}):`)
for (const [key, group] of [...groups].filter(([, g]) => g.count >= per).sort((a, b) => b[1].bytes - a[1].bytes).slice(0, top)) {
  console.log(`${mib(group.bytes).padStart(10)} ${String(group.count).padStart(8)} ${`${(group.bytes / per / 1024).toFixed(2)} KiB`.padStart(11)}  ${key}`)
}
const dictionaries = [...groups].filter(([k]) => k.endsWith("[own property dictionary]"))
console.log(`\nclosures with a property dictionary of their own: ${dictionaries.reduce((s, [, g]) => s + g.count, 0)}, ${mib(dictionaries.reduce((s, [, g]) => s + g.bytes, 0))}`)
