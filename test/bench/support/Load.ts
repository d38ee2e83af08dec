/**
 * One load run: the load worker in its own process against a server, while the CPU time and
 * memory of the processes involved (server, database backends, Redis, the load worker itself)
 * are read from /proc.
 */
import * as Effect from "effect/Effect"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { LoadResult, LoadSpec } from "./LoadWorker.js"
import { cpuSeconds, rssMiB, spawnTs } from "./Processes.js"

const WORKER = join(import.meta.dirname, "LoadWorker.ts")

export interface Measured extends LoadResult {
  /** Peak resident memory of the server during the run, MiB. */
  readonly serverRssMiB: number
  /** Busy cores (1.0 = one core fully busy) of each watched group over the whole run. */
  readonly cores: Record<string, number>
}

/**
 * Runs `spec` against the server `serverPid`, also watching the processes `groups` names (asked
 * at the start and at the end, so connections opened during the run are counted).
 */
export const run = (
  spec: LoadSpec,
  serverPid: number,
  groups: () => Promise<Record<string, ReadonlyArray<number>>> = async () => ({})
) =>
  Effect.promise(async (): Promise<Measured> => {
    const file = join(mkdtempSync(join(tmpdir(), "wagate-bench-")), "spec.json")
    writeFileSync(file, JSON.stringify(spec))
    const startPids = new Set([serverPid, ...Object.values(await groups()).flat()])
    const cpuBefore = new Map([...startPids].map((pid) => [pid, cpuSeconds(pid)]))
    const worker = spawnTs("load worker", WORKER, { args: [file], reportExit: false })
    const started = performance.now()
    let peak = rssMiB(serverPid)
    let usedByWorker = 0
    const sampler = setInterval(() => {
      peak = Math.max(peak, rssMiB(serverPid))
      usedByWorker = cpuSeconds(worker.pid) || usedByWorker
    }, 250)
    const code = await new Promise<number | null>((resolve) => worker.process.once("exit", resolve))
    clearInterval(sampler)
    const seconds = (performance.now() - started) / 1000
    if (code !== 0) throw new Error(`load worker failed:\n${worker.output()}`)
    const lines = worker.output().trim().split("\n")
    const result = JSON.parse(lines[lines.length - 1]) as LoadResult
    const used = (pids: ReadonlyArray<number>) =>
      pids.reduce((sum, pid) => sum + cpuSeconds(pid) - (cpuBefore.get(pid) ?? 0), 0)
    const busy: Record<string, number> = { server: used([serverPid]), ...Object.fromEntries(
      Object.entries(await groups()).map(([name, pids]) => [name, used(pids)])
    ), load: usedByWorker }
    const cores = Object.fromEntries(
      Object.entries(busy).map(([name, cpu]) => [name, Math.round((cpu / seconds) * 100) / 100])
    )
    return { ...result, serverRssMiB: Math.round(peak), cores }
  })
