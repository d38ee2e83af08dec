/**
 * Webhook delivery over a long run, for its memory: the standalone simulator, one api process and
 * two runners on a fresh PostgreSQL database (test/cluster/support/ClusterProcesses.ts), and eight
 * accounts whose endpoints answer 200 (three), 500 (two), never answer (one: each attempt times
 * out), answer 200 until `--down` minutes and then refuse (one), or were never there (one).
 * Events are written into the outbox (`Outbox.enqueue`, a transaction each, as the number
 * entities write them) at `--rate` a second in all, the accounts in turn. The runners run with
 * `--trace-gc` (their log, in SOAK_DIR, has the heap after each full collection: the floor) and
 * write a heap snapshot into SOAK_DIR at each of the `--snapshots` minutes; every 30 s this prints
 * the runners' RSS, the events waiting and what each endpoint received. Compare two snapshots
 * with test/bench/heap-summary.ts. Results: docs/performance.md, "Memory over a long run".
 *
 *   SOAK_DIR=/tmp/soak npx tsx test/bench/webhook-soak.ts [--minutes 12] [--rate 30] [--snapshots 2,11] [--down 3]
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as OpsClient from "@wagate/client/OpsClient"
import * as Outbox from "@wagate/store/Outbox"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { appendFileSync, mkdirSync } from "node:fs"
import { createServer, type Server } from "node:http"
import { parseArgs } from "node:util"
import * as ClusterProcesses from "../cluster/support/ClusterProcesses.js"
import { freePort } from "../support/Ports.js"
import { rssMiB, spawnTs } from "./support/Processes.js"

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    minutes: { type: "string", default: "12" },
    rate: { type: "string", default: "30" },
    snapshots: { type: "string", default: "2,11" },
    down: { type: "string", default: "3" }
  }
})
const DIR = process.env.SOAK_DIR ?? "/tmp/soak"
mkdirSync(DIR, { recursive: true })
const log = (line: string) => {
  const text = `${new Date().toISOString()} ${line}`
  console.log(text)
  appendFileSync(`${DIR}/soak.log`, text + "\n")
}

const counts = new Map<string, number>()
const serve = (port: number, answer: (path: string, res: import("node:http").ServerResponse) => void) =>
  new Promise<Server>((resolve) => {
    const server = createServer((req, res) => {
      req.resume()
      req.on("end", () => {
        const key = req.url ?? ""
        counts.set(key, (counts.get(key) ?? 0) + 1)
        answer(key, res)
      })
    })
    server.keepAliveTimeout = 60_000
    server.listen(port, "127.0.0.1", () => resolve(server))
  })

const main = Effect.scoped(Effect.gen(function*() {
  const minutes = Number(values.minutes)
  const rate = Number(values.rate)
  const snapshotsAt = values.snapshots!.split(",").map(Number)
  const runnerArgs = ["--trace-gc", "--heapsnapshot-signal=SIGUSR2", `--diagnostic-dir=${DIR}`]
  const cluster = yield* ClusterProcesses.start(2, () => Effect.void, { WEBHOOK_ALLOW_PRIVATE_URLS: "true" }, {
    spawn: (name, entry, options = {}) =>
      spawnTs(name, entry, {
        ...options,
        nodeArgs: name.startsWith("runner") ? [...(options.nodeArgs ?? []), ...runnerArgs] : options.nodeArgs,
        logFile: name.startsWith("runner") ? `${DIR}/${name}.log` : options.logFile
      })
  })
  const okPort = yield* freePort
  const failPort = yield* freePort
  const hangPort = yield* freePort
  const flakyPort = yield* freePort
  const deadPort = yield* freePort
  const hung: Array<import("node:http").ServerResponse> = []
  const ok = yield* Effect.promise(() => serve(okPort, (_p, res) => res.writeHead(200).end()))
  const fail = yield* Effect.promise(() => serve(failPort, (_p, res) => res.writeHead(500).end("nope")))
  const hang = yield* Effect.promise(() => serve(hangPort, (_p, res) => void hung.push(res)))
  let flaky: Server | null = yield* Effect.promise(() => serve(flakyPort, (_p, res) => res.writeHead(200).end()))
  yield* Effect.addFinalizer(() =>
    Effect.sync(() => {
      for (const s of [ok, fail, hang, flaky]) {
        s?.closeAllConnections()
        s?.close()
      }
    })
  )

  const http = yield* Layer.build(NodeHttpClient.layerUndici)
  const ops = yield* OpsClient.make({ baseUrl: cluster.apiUrl, token: ClusterProcesses.OPERATOR_TOKEN }).pipe(Effect.provide(http))
  const targets = [
    ["ok", okPort],
    ["ok", okPort],
    ["ok", okPort],
    ["fail", failPort],
    ["fail", failPort],
    ["hang", hangPort],
    ["flaky", flakyPort],
    ["dead", deadPort]
  ] as const
  const accounts: Array<number> = []
  for (const [i, [kind, port]] of targets.entries()) {
    const account = yield* ops.ops.createAccount({ payload: { email: `soak-${i}@example.kz`, company: "Soak" } })
    yield* ops.opsWebhooks.set({ path: { id: account.id }, payload: { url: `http://127.0.0.1:${port}/${kind}/${account.id}` } })
    accounts.push(account.id)
    log(`account ${account.id}: ${kind}`)
  }
  const pg = yield* PgClient.make({ url: Redacted.make(yield* dbUrl(cluster)), maxConnections: 4 }).pipe(
    Effect.provide(Reactivity.layer)
  )
  const runners = cluster.runners.filter((r) => r !== null)
  const started = Date.now()
  let written = 0
  let nextSnapshot = 0
  let lastReport = 0
  const text = "x".repeat(200)
  while (Date.now() - started < minutes * 60_000) {
    const elapsedMin = (Date.now() - started) / 60_000
    if (flaky !== null && elapsedMin >= Number(values.down)) {
      flaky.closeAllConnections()
      flaky.close()
      flaky = null
      log("flaky receiver down")
    }
    if (nextSnapshot < snapshotsAt.length && elapsedMin >= snapshotsAt[nextSnapshot]!) {
      for (const r of runners) r.process.kill("SIGUSR2")
      log(`snapshot ${nextSnapshot} asked`)
      nextSnapshot++
    }
    if (Date.now() - lastReport > 30_000) {
      lastReport = Date.now()
      const [{ waiting }] = yield* pg<{ waiting: number }>`SELECT count(*)::int AS waiting FROM webhook_outbox WHERE delivered_at IS NULL AND failed_at IS NULL`.pipe(
        Effect.catchAll(() => Effect.succeed([{ waiting: -1 }]))
      )
      log(
        `t=${elapsedMin.toFixed(1)}m written=${written} rss=${runners.map((r) => Math.round(rssMiB(r.pid))).join("/")} ` +
          `outbox=${waiting} received=${JSON.stringify(Object.fromEntries([...counts].map(([k, v]) => [k.split("/")[1] + k.split("/")[2], v])))}`
      )
    }
    const accountId = accounts[written % accounts.length]!
    const event = Outbox.envelope("message", Date.now(), { id: `m${written}`, from: "77010000000", name: "", text, hasMedia: false })
    yield* Outbox.enqueue(pg, accountId, event).pipe(pg.withTransaction, Effect.orDie)
    written++
    const due = started + (written * 1000) / rate - Date.now()
    if (due > 0) yield* Effect.sleep(`${due} millis`)
  }
  log(`done; written=${written}`)
  if (nextSnapshot < snapshotsAt.length) for (const r of runners) r.process.kill("SIGUSR2")
  // A snapshot of a large heap takes a minute or two: the runners are stopped only after.
  yield* Effect.sleep("150 seconds")
}))

const dbUrl = (cluster: { readonly database: string }) =>
  Effect.sync(() => {
    const u = new URL(process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test")
    u.pathname = `/${cluster.database}`
    return u.toString()
  })

NodeRuntime.runMain(main)
