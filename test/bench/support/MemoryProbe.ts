/**
 * A process entry that runs another entry (its first argument) with a memory probe: on SIGUSR2
 * it collects garbage (the process runs with `--expose-gc`) and writes `process.memoryUsage()`
 * as JSON to `$MEMORY_PROBE_DIR/<pid>.json`. /proc gives a child's RSS; its heap only the child
 * can tell, and only after a collection is it the live heap rather than the garbage of the moment.
 *
 *   MEMORY_PROBE_DIR=dir node --expose-gc --import tsx test/bench/support/MemoryProbe.ts <entry> [args]
 *
 * `spawnProbed` starts such a child; `readMemory` asks it.
 */
import * as Effect from "effect/Effect"
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs"
import { join, resolve } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { type Child, spawnTs } from "./Processes.js"

export interface Memory {
  readonly rss: number
  readonly heapUsed: number
  readonly heapTotal: number
  readonly external: number
  readonly arrayBuffers: number
}

const SELF = fileURLToPath(import.meta.url)

/** `spawnTs`, with the entry run under the probe (same signature, for ClusterProcesses' `spawn`). */
export const spawnProbed = (dir: string): typeof spawnTs => (name, entry, options = {}) =>
  spawnTs(name, SELF, {
    ...options,
    nodeArgs: ["--expose-gc", ...(options.nodeArgs ?? [])],
    args: [entry, ...(options.args ?? [])],
    env: { ...options.env, MEMORY_PROBE_DIR: dir }
  })

/** The memory of a probed child after a full collection, in bytes. */
export const readMemory = (dir: string, child: Child) =>
  Effect.promise(async () => {
    const file = join(dir, `${child.pid}.json`)
    rmSync(file, { force: true })
    child.process.kill("SIGUSR2")
    // A collection of a heap of a few GiB takes seconds on a busy machine.
    const deadline = Date.now() + 60_000
    while (!existsSync(file)) {
      if (Date.now() > deadline || child.process.exitCode !== null) {
        throw new Error(`${child.name} (pid ${child.pid}) did not report its memory`)
      }
      await new Promise((r) => setTimeout(r, 100))
    }
    return JSON.parse(readFileSync(file, "utf8")) as Memory
  }).pipe(Effect.orDie)

// Run as a process entry: install the probe, then become the entry.
if (resolve(process.argv[1] ?? "") === SELF) {
  const dir = process.env.MEMORY_PROBE_DIR
  const entry = process.argv[2]
  if (dir === undefined || entry === undefined) {
    console.error("usage: MEMORY_PROBE_DIR=dir node --expose-gc --import tsx MemoryProbe.ts <entry> [args]")
    process.exit(2)
  }
  const gc = (globalThis as { gc?: () => void }).gc
  if (gc === undefined) {
    console.error("MemoryProbe: run with --expose-gc")
    process.exit(2)
  }
  process.on("SIGUSR2", () => {
    // Twice: the first collection's finalizers may free more.
    gc()
    gc()
    const file = join(dir, `${process.pid}.json`)
    writeFileSync(`${file}.tmp`, JSON.stringify(process.memoryUsage()))
    renameSync(`${file}.tmp`, file)
  })
  const target = resolve(entry)
  process.argv.splice(1, 2, target)
  await import(pathToFileURL(target).href)
}
