/**
 * The scale-out benchmark's report: three Markdown tables (for docs/performance.md, "Scale-out"),
 * a note on what the machine's cores can show, and the verdict.
 */
import { cpus } from "node:os"
import type { Options } from "../cluster.js"
import type { Milestones, Sample } from "./ClusterBench.js"
import type { SendLoadResult } from "./SendLoad.js"
import * as Verdict from "./Verdict.js"

export interface SendRun {
  readonly runners: number
  readonly result: SendLoadResult
  /** Busy cores by process group over the measured window. */
  readonly cores: Record<string, number>
  /** Entities each runner reported, "a / b / c". */
  readonly entities: string
  readonly load: string
}

export interface Figures {
  readonly memory: {
    readonly none: { readonly runner: Sample; readonly sim: Sample }
    readonly full: { readonly runner: Sample; readonly sim: Sample }
    readonly entities: number | null
    readonly wake: { readonly ms: number; readonly cores: Record<string, number>; readonly load: string }
  }
  readonly restart: {
    readonly up: Milestones
    readonly registeredMs: number | null
    readonly stopMs: number
    readonly cores: Record<string, number>
    readonly load: string
    /** Each runner's memory once idle after the restart, with the entities it reported. */
    readonly memory: { readonly samples: ReadonlyArray<Sample>; readonly entities: ReadonlyArray<number> } | null
    /** Sessions a number opened on the network from the runners' start to 10 s after the last was up. */
    readonly sessions: number | null
  }
  readonly sends: ReadonlyArray<SendRun>
  readonly base: { readonly up: Milestones; readonly perSecond: number; readonly p99: number }
}

const MiB = 1024 * 1024
export const mib = (bytes: number) => (bytes / MiB).toFixed(0)
export const secs = (ms: number | null) => (ms === null ? "never" : `${(ms / 1000).toFixed(1)} s`)

const perNumber = (none: Sample, full: Sample, n: number) => ({
  rssPer1000: ((full.rss - none.rss) / MiB / n) * 1000,
  heapPer1000: ((full.heap - none.heap) / MiB / n) * 1000,
  rssKiB: (full.rss - none.rss) / 1024 / n,
  heapKiB: (full.heap - none.heap) / 1024 / n
})

type PerNumber = ReturnType<typeof perNumber>

const sum = (samples: ReadonlyArray<Sample>): Sample => ({
  rss: samples.reduce((s, m) => s + m.rss, 0),
  heap: samples.reduce((s, m) => s + m.heap, 0)
})
const times = (sample: Sample, k: number): Sample => ({ rss: sample.rss * k, heap: sample.heap * k })

const cores = (c: Record<string, number>, groups: ReadonlyArray<string>) =>
  `${groups.map((k) => (c[k] ?? 0).toFixed(2)).join(" / ")} (${Object.values(c).reduce((a, b) => a + b, 0).toFixed(2)})`

const rate = (r: SendLoadResult) => r.accepted / r.seconds

const refused = (r: SendLoadResult) =>
  Object.keys(r.refused).length === 0 ? "0" : Object.entries(r.refused).map(([code, k]) => `${k}× ${code}`).join(", ")

/** Codes that mean something did not work (a 429 or a 503 is the gateway doing its job). */
const broken = (r: SendLoadResult) =>
  Object.keys(r.refused).filter((code) => code === "transport" || code === "internal" || /^5\d\d/.test(code))

/** The memory per number of the runners after the restart, against as many runners with none. */
const restartMemory = (o: Options, f: Figures) =>
  f.restart.memory === null
    ? null
    : perNumber(times(f.memory.none.runner, f.restart.memory.samples.length), sum(f.restart.memory.samples), o.numbers)

export const tables = (o: Options, f: Figures): string => {
  const { memory, restart, sends, base } = f
  const oneRunner = perNumber(memory.none.runner, memory.full.runner, o.memoryNumbers)
  const simulator = perNumber(memory.none.sim, memory.full.sim, o.memoryNumbers)
  const spread = restartMemory(o, f)
  const row = (name: string, n: number, none: Sample, full: Sample, per: PerNumber, holds: string) =>
    `| ${name} | ${n} | ${mib(none.rss)} / ${mib(none.heap)} | ${mib(full.rss)} / ${mib(full.heap)} | ` +
    `${Verdict.fixed(per.rssPer1000)} / ${Verdict.fixed(per.heapPer1000)} | ${Verdict.fixed(per.rssKiB)} / ${Verdict.fixed(per.heapKiB)} | ${holds} |`
  const memoryTable = [
    "| process | numbers | with none: RSS / heap MiB | with them: RSS / heap MiB | per 1,000 numbers: RSS / heap MiB | per number: RSS / heap KiB | entities reported |",
    "|---|---|---|---|---|---|---|",
    row("one runner", o.memoryNumbers, memory.none.runner, memory.full.runner, oneRunner, String(memory.entities ?? "?")),
    ...(spread === null || restart.memory === null ? [] : [
      row(
        `${restart.memory.samples.length} runners after the restart (sum)`,
        o.numbers,
        times(memory.none.runner, restart.memory.samples.length),
        sum(restart.memory.samples),
        spread,
        restart.memory.entities.join(" / ")
      )
    ]),
    row("standalone simulator (baseline)", o.memoryNumbers, memory.none.sim, memory.full.sim, simulator, "sessions")
  ].join("\n")

  const m = restart.up
  const groups = ["api", "runners", "postgres", "simulator"]
  /** CPU milliseconds of every process together per number brought up in `ms`. */
  const cpuPerNumber = (c: Record<string, number>, ms: number | null, n: number) =>
    ms === null ? "" : Verdict.fixed((Object.values(c).reduce((a, b) => a + b, 0) * ms) / n, 0)
  const restartTable = [
    "| numbers | brought up by | runners registered | first WORKING | half | 90% | all WORKING | sessions a number | busy cores: api / runners / postgres / simulator (sum) | CPU ms per number | load average |",
    "|---|---|---|---|---|---|---|---|---|---|---|",
    `| ${o.numbers} | full restart: ${o.restartRunners} runners started${o.stagger > 0 ? ` ${secs(o.stagger)} apart` : ""} (CLUSTER_MIN_RUNNERS ${o.minRunners}) | ${secs(restart.registeredMs)} | ${secs(m.first)} | ` +
    `${secs(m.half)} | ${secs(m.most)} | ${secs(m.all)}${m.all === null ? ` (${m.last} of ${o.numbers})` : ""} | ` +
    `${restart.sessions === null ? "" : Verdict.fixed(restart.sessions, 2)} | ` +
    `${cores(restart.cores, groups)} | ${cpuPerNumber(restart.cores, m.all, o.numbers)} | ${restart.load} |`,
    `| ${o.memoryNumbers} | one runner already up, a request each (32 at a time) | | | | | ${secs(memory.wake.ms)} | | ` +
    `${cores(memory.wake.cores, groups)} | ${cpuPerNumber(memory.wake.cores, memory.wake.ms, o.memoryNumbers)} | ${memory.wake.load} |`,
    `| ${o.numbers} | baseline: sessions opened on the simulator from one process (32 at a time) | | ${secs(base.up.first)} | ` +
    `${secs(base.up.half)} | ${secs(base.up.most)} | ${secs(base.up.all)} | 1 | | | |`
  ].join("\n")

  const one = sends.find((s) => s.runners === 1)
  const sendGroups = ["api", "runners", "postgres", "simulator", "load"]
  const sendsTable = [
    "| runners (+ 1 api) | senders | accepted/s | ratio to 1 runner | p50 ms | p99 ms | non-200 | busy cores: api / runners / postgres / simulator / load (sum) | entities per runner | load average |",
    "|---|---|---|---|---|---|---|---|---|---|",
    ...sends.map((s) =>
      `| ${s.runners} | ${o.senders} | ${rate(s.result).toFixed(0)} | ${one === undefined ? "" : (rate(s.result) / rate(one.result)).toFixed(2)} | ` +
      `${s.result.p50.toFixed(0)} | ${s.result.p99.toFixed(0)} | ${refused(s.result)} | ${cores(s.cores, sendGroups)} | ${s.entities} | ${s.load} |`
    ),
    `| baseline: simulator directly | ${o.senders} | ${base.perSecond.toFixed(0)} | | | ${base.p99.toFixed(1)} | 0 | | | |`
  ].join("\n")

  const busiest = Math.max(0, ...sends.map((s) => Object.values(s.cores).reduce((a, b) => a + b, 0)))
  const note = `On this machine (${cpus().length} cores) every process (api, runners, PostgreSQL, Redis, the simulator and ` +
    `the load) shares the same cores; the busiest send run kept ${busiest.toFixed(2)} of them busy. A second or third ` +
    `runner adds no CPU here, so the ratio shows what the cluster's coordination costs (entity calls crossing processes, ` +
    `shard hand-overs, more database connections), not how it scales; that needs a core (or a machine) per runner, with ` +
    `the api and PostgreSQL on their own.`

  return [
    `\n### Memory per idle number entity\n\n${memoryTable}\n`,
    `### Bringing numbers up\n\n${restartTable}\n`,
    `### Accepted sends/s by runners\n\n${sendsTable}\n\n${note}\n`
  ].join("\n")
}

export const verdict = (o: Options, f: Figures) => {
  const { memory, restart, sends, base } = f
  const oneRunner = perNumber(memory.none.runner, memory.full.runner, o.memoryNumbers)
  const simulator = perNumber(memory.none.sim, memory.full.sim, o.memoryNumbers)
  const spread = restartMemory(o, f)
  const one = sends.find((s) => s.runners === 1)
  const none = "none named (figure recorded)"
  const m = restart.up
  const memoryFigure = (p: PerNumber) =>
    `${Verdict.fixed(p.rssPer1000)} MiB RSS, ${Verdict.fixed(p.heapPer1000)} MiB heap per 1,000 ` +
    `(${Verdict.fixed(p.rssKiB)} / ${Verdict.fixed(p.heapKiB)} KiB each)`
  return Verdict.verdict("cluster", [
    {
      what: `memory per idle number entity, one runner (${o.memoryNumbers} numbers)`,
      target: none,
      measured: memoryFigure(oneRunner),
      baseline: `simulator: ${Verdict.fixed(simulator.rssKiB)} KiB RSS, ${Verdict.fixed(simulator.heapKiB)} KiB heap per session`,
      met: true
    },
    ...(spread === null ? [] : [{
      what: `memory per idle number entity, ${o.restartRunners} runners (${o.numbers} numbers)`,
      target: none,
      measured: memoryFigure(spread),
      baseline: "",
      met: true
    }]),
    {
      what: `${o.numbers} numbers WORKING after a full restart (${o.restartRunners} runners)`,
      target: "every number WORKING (no time named)",
      measured: m.all === null ? `only ${m.last} of ${o.numbers} within the deadline` : secs(m.all),
      baseline: `sessions opened directly: ${secs(base.up.all)}`,
      met: m.all !== null
    },
    ...sends.map((s): Verdict.Check => ({
      what: `accepted sends/s, ${s.runners} runner(s) + 1 api, ${o.senders} numbers at 1/s`,
      target: none,
      measured: `${rate(s.result).toFixed(0)}/s` +
        (one === undefined ? "" : ` (${(rate(s.result) / rate(one.result)).toFixed(2)} × 1 runner)`) +
        (broken(s.result).length > 0 ? `; errors: ${broken(s.result).map((c) => `${s.result.refused[c]}× ${c}`).join(", ")}` : ""),
      baseline: `simulator directly: ${base.perSecond.toFixed(0)}/s`,
      met: broken(s.result).length === 0 && s.result.accepted > 0
    }))
  ])
}
