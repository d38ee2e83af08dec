/**
 * The benchmarks' child processes (test/bench/support/Processes.ts) never outlive their run:
 * stopped when their scope closes on success, failure or a timeout, and killed when the
 * benchmark process itself exits while they still run. Every registered benchmark loads in a
 * plain Node process, and the gateways they start run with the node flags and the TypeScript
 * loader of `npm start`; the send benchmark's watch of a gateway's window reports its full
 * collections and how long its event loop was held.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { execFile } from "node:child_process"
import { fileURLToPath } from "node:url"
import { existsSync, mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import {
  type Child,
  cpuBetween,
  cpuByPid,
  GATEWAY_NODE_ARGS,
  scopedNode,
  spawnNode,
  stop,
  TYPESCRIPT_LOADER
} from "../bench/support/Processes.js"
import { summarize } from "../bench/gc-summary.js"
import { eventually } from "../support/Fixtures.js"

const PROCESSES = fileURLToPath(new URL("../bench/support/Processes.ts", import.meta.url))
/** A child that runs until it is stopped. */
const SLEEPER = ["-e", "setInterval(() => {}, 1000)"]

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** Polls until `pid` is gone, failing after `ms`. */
const gone = (pid: number, ms = 15_000) =>
  Effect.gen(function*() {
    const deadline = Date.now() + ms
    while (alive(pid)) {
      if (Date.now() > deadline) return yield* Effect.dieMessage(`process ${pid} still runs`)
      yield* Effect.sleep("50 millis")
    }
  })

/** Polls until `child` has printed `line`, failing after `ms`. */
const printed = (child: Child, line: string, ms: number) =>
  eventually(Effect.sync(child.output), (output) => output.includes(line), ms)

describe("benchmark child processes", () => {
  it.live("are stopped when their scope ends, by success, failure or timeout", () =>
    Effect.gen(function*() {
      let pid = 0
      const start = Effect.tap(scopedNode("sleeper", SLEEPER), (child) => (pid = child.pid))
      yield* Effect.scoped(start)
      yield* gone(pid)
      const failed = yield* Effect.scoped(Effect.zipRight(start, Effect.fail("the benchmark failed"))).pipe(Effect.flip)
      assert.strictEqual(failed, "the benchmark failed")
      yield* gone(pid)
      const timedOut = yield* Effect.scoped(Effect.zipRight(start, Effect.never)).pipe(Effect.timeout("300 millis"), Effect.flip)
      assert.strictEqual(timedOut._tag, "TimeoutException")
      yield* gone(pid)
    }), 60_000)

  it.live("are killed when the benchmark process exits while they run", () =>
    Effect.gen(function*() {
      // A process that starts a child and then exits abruptly, as a crashed benchmark would.
      const script = `import(${JSON.stringify(PROCESSES)}).then((p) => {
        const child = p.spawnNode("sleeper", ${JSON.stringify(SLEEPER)})
        console.log(child.pid)
        setTimeout(() => process.exit(3), 300)
      })`
      const { code, pid } = yield* Effect.async<{ code: number | null; pid: number }>((resume) => {
        execFile(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], (error, stdout) => {
          resume(Effect.succeed({ code: error === null ? 0 : (error.code as number), pid: Number(stdout.trim()) }))
        })
      })
      assert.strictEqual(code, 3)
      assert.isTrue(pid > 0)
      yield* gone(pid)
    }), 60_000)

  it.live("count the CPU of processes that come and go between two readings: a new one whole, an ended one not at all", () =>
    Effect.gen(function*() {
      // A process under a name of its own that uses 300 ms of CPU, says so, and then idles.
      const name = `wagate-cpu-${process.pid % 10_000}`
      const burner = ["-e", `process.title = ${JSON.stringify(name)}
        while (process.cpuUsage().user < 300_000) {}
        console.log("burned")
        setInterval(() => {}, 1000)`]
      const first = yield* scopedNode("burner", burner, { reportExit: false })
      yield* printed(first, "burned", 30_000)
      const before = cpuByPid(name)
      assert.deepStrictEqual([...before.keys()], [first.pid])
      // Between the readings the first ends (as a backend or an autovacuum worker may) and a
      // second starts and works.
      yield* stop(first)
      yield* gone(first.pid)
      const second = yield* scopedNode("burner", burner, { reportExit: false })
      yield* printed(second, "burned", 30_000)
      const after = cpuByPid(name)
      assert.deepStrictEqual([...after.keys()], [second.pid])
      const total = (readings: ReadonlyMap<number, number>) => [...readings.values()].reduce((a, b) => a + b, 0)
      // The second's work counts whole, and the first's 300 ms are not taken off it, as they
      // would be if one sum were taken from the other.
      assert.isAtLeast(total(before), 0.29)
      assert.isAtLeast(cpuBetween(before, after), 0.29)
      assert.strictEqual(cpuBetween(before, after), total(after))
    }).pipe(Effect.scoped), 90_000)

  it("spawnNode keeps what the child wrote, for the report of a failure", async () => {
    const child = spawnNode("echo", ["-e", "console.log('hello from the child')"], { reportExit: false })
    await new Promise((resolve) => child.process.once("exit", resolve))
    assert.include(child.output(), "hello from the child")
  })
})

describe("the benchmarks", () => {
  // Each runs in a plain Node process (`npm run bench`), where a module that needs the test
  // runner (vitest's `assert`) fails to load: the cluster benchmark once did, through a helper
  // it shares with the cluster tests.
  const registered = [...readFileSync(new URL("../bench/run.ts", import.meta.url), "utf8").matchAll(/import\("\.\/(\w+)\.js"\)/g)]
    .map((match) => match[1]!)

  it("are all registered in the runner", () => {
    assert.includeMembers(registered, ["messages", "baileys", "webhooks", "media", "send", "exports", "cluster"])
  })

  it.each(registered)("%s loads outside the test runner", async (name) => {
    const script = `const m = await import(${JSON.stringify(fileURLToPath(new URL(`../bench/${name}.ts`, import.meta.url)))})
      if (typeof m.main !== "function") throw new Error("no main")`
    const failure = await new Promise<string | undefined>((resolve) =>
      execFile(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], (error, _stdout, stderr) =>
        resolve(error === null ? undefined : stderr)
      )
    )
    assert.isUndefined(failure, failure)
  }, 60_000)
})

describe("the benchmarks' gateways", () => {
  it("run with the node flags and the TypeScript loader `npm start` gives the gateway", () => {
    const start: string = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")).scripts.start
    assert.strictEqual(start, `exec node ${[...GATEWAY_NODE_ARGS, ...TYPESCRIPT_LOADER].join(" ")} apps/gateway/src/main.ts`)
  })
})

describe("the send benchmark's watch of the gateway", () => {
  it.live("reports the full collections and the longest hold of the event loop between its two signals", () =>
    Effect.gen(function*() {
      const file = join(mkdtempSync(join(tmpdir(), "wagate-gc-watch-")), "watch.json")
      // Once the window has begun: a full collection, then 300 ms in which the loop is held, and
      // at once the window's end (the collection's entry is made only on the loop's next turn).
      const script = `let begun = false
        process.on("SIGUSR2", () => {
          if (begun) return
          begun = true
          setTimeout(() => {
            globalThis.gc()
            const until = Date.now() + 300
            while (Date.now() < until) {}
            console.log("done")
            process.kill(process.pid, "SIGUSR2")
          }, 50)
        })
        console.log("ready")
        setInterval(() => {}, 1000)`
      const watch = fileURLToPath(new URL("../bench/support/gc-watch.mjs", import.meta.url))
      const child = yield* scopedNode("watched", ["--expose-gc", "--trace-gc", "--import", watch, "-e", script], {
        env: { GC_WATCH_FILE: file },
        reportExit: false
      })
      yield* printed(child, "ready", 20_000)
      process.kill(child.pid, "SIGUSR2")
      yield* printed(child, "done", 20_000)
      yield* eventually(Effect.sync(() => existsSync(file)), (written) => written, 20_000)
      const report = JSON.parse(readFileSync(file, "utf8"))
      assert.isAtLeast(report.fullCollections.length, 1)
      const [first] = report.fullCollections
      assert.isAtLeast(first.atMs, 0)
      assert.isAtMost(first.atMs, report.windowMs)
      assert.isAtLeast(first.pauseMs, 0)
      assert.isAtLeast(report.loopDelayMaxMs, 250)
      assert.isAtMost(report.loopDelayP99Ms, report.loopDelayMaxMs)
      // The window is marked in the log, in --trace-gc's clock, for gc-summary.
      const summary = summarize(child.output())
      assert.isNotNull(summary.window)
      assert.isAtLeast(summary.window!.endMs - summary.window!.startMs, 300)
      assert.strictEqual(summary.fullCollections.length, report.fullCollections.length)
    }).pipe(Effect.scoped), 60_000)
})

describe("gc-summary", () => {
  it("reads the main thread's collections in the marked window", () => {
    const log = [
      "[7:0x1]      900 ms: Scavenge 100.0 (120.0) -> 90.0 (120.0) MB, 2.0 / 0.0 ms  allocation failure;",
      "gc-watch: the measured window starts at 1000 ms",
      "[7:0x2]     1050 ms: Scavenge 9.0 (10.0) -> 8.0 (10.0) MB, 1.0 / 0.0 ms  allocation failure;",
      "[7:0x1]     1100 ms: Scavenge 150.0 (170.0) -> 100.0 (170.0) MB, 3.0 / 0.0 ms  allocation failure;",
      "[7:0x1]     1300 ms: Scavenge 160.0 (170.0) -> 102.0 (170.0) MB, 3.0 / 0.0 ms  allocation failure;",
      "[7:0x1]     1400 ms: Mark-Compact 103.0 (170.0) -> 60.0 (150.0) MB, 30.5 / 0.1 ms  (+ 100 ms in 20 steps) finalize;",
      "[7:0x1]     1500 ms: Scavenge 120.0 (150.0) -> 61.0 (150.0) MB, 3.0 / 0.0 ms  allocation failure;",
      "[7:0x1]     1700 ms: Scavenge 121.0 (150.0) -> 63.0 (150.0) MB, 3.0 / 0.0 ms  allocation failure;",
      "[7:0x1]     1900 ms: Mark-Compact (reduce) 63.0 (150.0) -> 50.0 (90.0) MB, 20.0 / 0.1 ms  finalize;",
      "gc-watch: the measured window ends at 1800 ms"
    ].join("\n")
    const s = summarize(log)
    assert.deepStrictEqual(s.window, { startMs: 1000, endMs: 1800 })
    assert.strictEqual(s.scavenges, 4)
    assert.strictEqual(s.scavengeEveryMs, 200)
    // +2 MB over 200 ms, then +2 MB over 200 ms (the span across the full collection left out).
    assert.closeTo(s.oldGenerationMbPerSecond, 10, 1e-9)
    assert.deepStrictEqual(s.fullCollections.map((c) => [c.atMs, c.beforeMb, c.afterMb, c.pauseMs]), [[1400, 103, 60, 30.5]])
  })
})
