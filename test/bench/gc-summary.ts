/**
 * What the garbage collector did to a process over the send benchmark's measured window, from
 * its log with `--trace-gc` (BENCH_NODE_ARGS="--trace-gc" BENCH_GATEWAY_LOG=FILE): how fast the
 * old generation filled (what young collections kept, between two of them with no full
 * collection in between, per second), how often young collections came, and the full
 * collections with their heap before and after. The window is the one `support/gc-watch.mjs`
 * marks in the log; without marks, the whole log. Only the main thread's heap is read (the
 * isolate with the most young collections: the loader's thread has one of its own).
 *
 *   npx tsx test/bench/gc-summary.ts FILE
 */
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"

export interface Collection {
  readonly atMs: number
  readonly kind: "Scavenge" | "Mark-Compact"
  readonly beforeMb: number
  readonly afterMb: number
  readonly pauseMs: number
}

export interface GcSummary {
  readonly window: { readonly startMs: number; readonly endMs: number } | null
  readonly scavenges: number
  /** Mean time between two young collections, in ms. */
  readonly scavengeEveryMs: number
  /** MB a second the heap kept after young collections grew by, full collections left out. */
  readonly oldGenerationMbPerSecond: number
  readonly fullCollections: ReadonlyArray<Collection>
}

const LINE = /^\[(\d+:0x[0-9a-f]+)\]\s+(\d+) ms: (Scavenge|Mark-Compact)(?: \(reduce\))? ([\d.]+) \([\d.]+\) -> ([\d.]+) \([\d.]+\) MB, ([\d.]+)/

export const summarize = (log: string): GcSummary => {
  const byIsolate = new Map<string, Array<Collection>>()
  for (const line of log.split("\n")) {
    const m = LINE.exec(line)
    if (m === null) continue
    const list = byIsolate.get(m[1]!) ?? []
    list.push({ atMs: Number(m[2]), kind: m[3] as Collection["kind"], beforeMb: Number(m[4]), afterMb: Number(m[5]), pauseMs: Number(m[6]) })
    byIsolate.set(m[1]!, list)
  }
  const scavengesOf = (list: ReadonlyArray<Collection>) => list.filter((c) => c.kind === "Scavenge").length
  const main = [...byIsolate.values()].sort((a, b) => scavengesOf(b) - scavengesOf(a))[0] ?? []
  const start = /gc-watch: the measured window starts at (\d+) ms/.exec(log)
  const end = /gc-watch: the measured window ends at (\d+) ms/.exec(log)
  const window = start && end ? { startMs: Number(start[1]), endMs: Number(end[1]) } : null
  const inWindow = window === null ? main : main.filter((c) => c.atMs >= window.startMs && c.atMs <= window.endMs)
  let grownMb = 0
  let spanMs = 0
  let previous: Collection | undefined
  for (const c of inWindow) {
    if (c.kind !== "Scavenge") {
      previous = undefined
      continue
    }
    if (previous !== undefined) {
      grownMb += c.afterMb - previous.afterMb
      spanMs += c.atMs - previous.atMs
    }
    previous = c
  }
  const scavenges = inWindow.filter((c) => c.kind === "Scavenge")
  const first = scavenges[0]
  const last = scavenges[scavenges.length - 1]
  return {
    window,
    scavenges: scavenges.length,
    scavengeEveryMs: first && last && scavenges.length > 1 ? (last.atMs - first.atMs) / (scavenges.length - 1) : 0,
    oldGenerationMbPerSecond: spanMs > 0 ? (grownMb / spanMs) * 1000 : 0,
    fullCollections: inWindow.filter((c) => c.kind === "Mark-Compact")
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const file = process.argv[2]
  if (file === undefined) {
    console.error("usage: gc-summary FILE (a log with --trace-gc lines)")
    process.exit(2)
  }
  const s = summarize(readFileSync(file, "utf8"))
  const origin = s.window?.startMs ?? 0
  console.log(s.window === null ? "the whole log (no window marked)" : `the measured window: ${s.window.endMs - s.window.startMs} ms`)
  console.log(`young collections: ${s.scavenges}, one every ${s.scavengeEveryMs.toFixed(0)} ms`)
  console.log(`old generation: +${s.oldGenerationMbPerSecond.toFixed(2)} MB/s`)
  console.log(`full collections: ${s.fullCollections.length}`)
  for (const c of s.fullCollections) {
    console.log(`  at ${((c.atMs - origin) / 1000).toFixed(1)} s: ${c.beforeMb} -> ${c.afterMb} MB, a ${c.pauseMs} ms pause`)
  }
}
