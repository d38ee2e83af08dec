/**
 * Child processes of a benchmark: each server under test and each load generator runs in its own
 * Node process, so none shares an event loop with another. Their memory and CPU time are read
 * from /proc.
 */
import * as Effect from "effect/Effect"
import { type ChildProcess, spawn } from "node:child_process"
import { createWriteStream, readFileSync, readdirSync } from "node:fs"
import { cpus, loadavg, totalmem } from "node:os"
import { fileURLToPath } from "node:url"

export const REPO = fileURLToPath(new URL("../../../", import.meta.url))

export interface Child {
  readonly name: string
  readonly process: ChildProcess
  readonly pid: number
  /** What the process wrote to stdout and stderr, for the reader when something goes wrong. */
  readonly output: () => string
  /** Set by `stop`, so that the exit is not reported as unexpected. */
  readonly stopping: { value: boolean }
}

/**
 * Every child started here and not yet gone. Whatever way the benchmark ends, none outlives it:
 * a scope that closes (success, failure, or an interruption by SIGINT/SIGTERM through
 * `NodeRuntime.runMain`) stops its children gracefully with `stop`; and when the process exits
 * any child still running is killed on the spot (SIGKILL), so a crash or `process.exit` leaves
 * no orphan behind either.
 */
const live = new Set<ChildProcess>()
process.once("exit", () => {
  for (const child of live) child.kill("SIGKILL")
})

const OUTPUT_KEPT = 1_000_000

interface SpawnOptions {
  readonly env?: Record<string, string>
  /** Whether the child starts from this process' environment, `env` on top (default true). */
  readonly inheritEnv?: boolean
  /** Whether an exit not asked for by `stop` is reported on stderr (default true). */
  readonly reportExit?: boolean
  /** An IPC channel to the child (`child.process.send`, `process.send` in the child). */
  readonly ipc?: boolean
  /** A file that receives everything the process writes, besides what is kept in memory. */
  readonly logFile?: string
}

/** Node running `args` (a script and its arguments), in the repository. */
export const spawnNode = (name: string, args: ReadonlyArray<string>, options: SpawnOptions = {}): Child => {
  const child = spawn(process.execPath, args, {
    cwd: REPO,
    env: options.inheritEnv === false ? options.env : { ...process.env, ...options.env },
    stdio: options.ipc === true ? ["ignore", "pipe", "pipe", "ipc"] : ["ignore", "pipe", "pipe"]
  })
  live.add(child)
  child.once("exit", () => live.delete(child))
  // The last megabyte of what it wrote (trimmed now and then, not on every chunk).
  let output = ""
  const keep = (chunk: Buffer) => {
    output += chunk.toString()
    if (output.length > 2 * OUTPUT_KEPT) output = output.slice(-OUTPUT_KEPT)
  }
  child.stdout!.on("data", keep)
  child.stderr!.on("data", keep)
  if (options.logFile !== undefined) {
    const file = createWriteStream(options.logFile, { flags: "a" })
    child.stdout!.pipe(file, { end: false })
    child.stderr!.pipe(file, { end: false })
    child.once("close", () => file.end())
  }
  const stopping = { value: false }
  child.once("exit", (code, signal) => {
    if (!stopping.value && options.reportExit !== false) {
      console.error(`${name} (pid ${child.pid}) exited unexpectedly (code ${code}, signal ${signal}):\n${output}`)
    }
  })
  return { name, process: child, pid: child.pid!, output: () => output.slice(-OUTPUT_KEPT), stopping }
}

/** How `npm start` has Node run TypeScript (runtime/typescript.mjs). */
export const TYPESCRIPT_LOADER: ReadonlyArray<string> = ["--import", "./runtime/typescript.mjs"]

/** A TypeScript entry run with Node as `npm start` runs the gateway. */
export const spawnTs = (
  name: string,
  entry: string,
  options: SpawnOptions & {
    readonly args?: ReadonlyArray<string>
    readonly nodeArgs?: ReadonlyArray<string>
  } = {}
): Child => spawnNode(name, [...(options.nodeArgs ?? []), ...TYPESCRIPT_LOADER, entry, ...(options.args ?? [])], options)

/**
 * The next message of a child started with `ipc`; a child that exits first (its output says why)
 * fails it, so a benchmark never waits for ever on a load that died.
 */
export const nextMessage = (child: Child): Promise<unknown> =>
  new Promise((resolve, reject) => {
    const died = (code: number | null, signal: string | null) =>
      reject(new Error(`${child.name} exited (code ${code}, signal ${signal}) before reporting:\n${child.output()}`))
    child.process.once("exit", died)
    child.process.once("message", (message) => {
      child.process.off("exit", died)
      resolve(message)
    })
  })

/** Ends a child (SIGTERM, then SIGKILL after `graceMs`) and waits for its exit. */
export const stop = (child: Child, graceMs = 5000) =>
  Effect.promise(() =>
    new Promise<void>((resolve) => {
      if (child.process.exitCode !== null || child.process.signalCode !== null) return resolve()
      child.stopping.value = true
      const timer = setTimeout(() => child.process.kill("SIGKILL"), graceMs)
      child.process.once("exit", () => {
        clearTimeout(timer)
        resolve()
      })
      child.process.kill("SIGTERM")
    })
  )

/** A child for the scope: stopped when the scope closes. */
export const scopedTs = (...args: Parameters<typeof spawnTs>) =>
  Effect.acquireRelease(Effect.sync(() => spawnTs(...args)), (child) => stop(child))

/** A Node child for the scope: stopped when the scope closes. */
export const scopedNode = (...args: Parameters<typeof spawnNode>) =>
  Effect.acquireRelease(Effect.sync(() => spawnNode(...args)), (child) => stop(child))

/** Polls `url` until it answers 200, failing with the child's output after `timeoutMs`. */
export const waitReady = (child: Child, url: string, timeoutMs = 60_000, headers: Record<string, string> = {}) =>
  Effect.promise(async () => {
    const deadline = Date.now() + timeoutMs
    while (Date.now() < deadline) {
      if (child.process.exitCode !== null) break
      try {
        const response = await fetch(url, { headers, signal: AbortSignal.timeout(2000) })
        await response.arrayBuffer()
        if (response.status === 200) return
      } catch {
        // not listening yet
      }
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
    throw new Error(`${child.name} did not become ready at ${url}:\n${child.output()}`)
  }).pipe(Effect.orDie)

/**
 * The node flags `npm start` runs the gateway with (package.json's `start`), so that benchmarks
 * measure the gateway as it runs (test/infra/bench-processes.test.ts checks that they agree).
 */
export const GATEWAY_NODE_ARGS: ReadonlyArray<string> = ["--max-semi-space-size=64", "--expose-gc"]

/** Resident memory of a process in MiB (0 once it is gone). */
export const rssMiB = (pid: number): number => {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))
    return match ? Number(match[1]) / 1024 : 0
  } catch {
    return 0
  }
}

const TICKS_PER_SECOND = 100

/** CPU seconds (user + system, all threads) a process has used so far (0 once it is gone). */
export const cpuSeconds = (pid: number): number => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND
  } catch {
    return 0
  }
}

/** CPU seconds so far of every process whose command name is `name`, by pid. */
export const cpuByPid = (name: string): ReadonlyMap<number, number> =>
  new Map(pidsNamed(name).map((pid) => [pid, cpuSeconds(pid)]))

/**
 * The CPU seconds processes used between two `cpuByPid` readings. A process started in between
 * counts whole. One that ended in between is left out (its CPU can no longer be read), where
 * taking one sum from the other would subtract all it had used before.
 */
export const cpuBetween = (before: ReadonlyMap<number, number>, after: ReadonlyMap<number, number>): number => {
  let used = 0
  for (const [pid, seconds] of after) used += seconds - (before.get(pid) ?? 0)
  return used
}

/** The processes whose command name is `name` (e.g. every `postgres` backend). */
export const pidsNamed = (name: string) =>
  readdirSync("/proc").filter((entry) => /^\d+$/.test(entry)).filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/comm`, "utf8").trim() === name
    } catch {
      return false
    }
  }).map(Number)

/** CPU model, cores, memory and Node version, for the report. */
export const machine = () => {
  const cpu = cpus()
  return `${cpu.length} × ${cpu[0]?.model ?? "?"}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}, ` +
    `load average ${loadavg().map((n) => n.toFixed(2)).join(" ")}`
}
