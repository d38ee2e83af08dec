/**
 * SIGTERM to a real gateway whose number entity is stuck, two ways: its send waits in PostgreSQL
 * behind a lock the test holds (as a statement stuck on a busy database would), or a test hook
 * wedges it in a step that cannot be interrupted. The process exits within SHUTDOWN_TIMEOUT_MS
 * (the first gracefully, the second by the hard exit at the bound), and a replacement on the
 * same HTTP and runner ports starts cleanly and sends from the same number.
 */
import * as OpsClient from "@wagate/client/OpsClient"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import pg from "pg"
import { eventually, linked, provision } from "../support/Fixtures.js"
import { freePort, freshDatabase, OPERATOR_TOKEN, WEBHOOK_SECRET_KEY } from "../support/TestGateway.js"

const root = join(import.meta.dirname, "../..")
const BOUND_MS = 4_000

interface Gateway {
  readonly child: ChildProcess
  readonly output: () => string
}

/** `npm start`'s command with the test's environment; killed with the scope if still running. */
const startGateway = (env: Record<string, string>, entry = "apps/gateway/src/main.ts") =>
  Effect.acquireRelease(
    Effect.gen(function*() {
      const base: Record<string, string> = {}
      for (const [k, v] of Object.entries(process.env)) {
        if (v !== undefined && !/^(DATABASE_URL|REDIS_URL|OPERATOR_TOKEN|S3_|WA_|WAGATE_|HTTP_|RUNNER_|WEBHOOK_)/.test(k)) base[k] = v
      }
      const child = spawn(process.execPath, ["--import", "tsx", entry], {
        cwd: root,
        env: { ...base, ...env },
        stdio: ["ignore", "pipe", "pipe"]
      })
      let output = ""
      child.stdout!.on("data", (d) => (output += d))
      child.stderr!.on("data", (d) => (output += d))
      const gateway: Gateway = { child, output: () => output }
      yield* eventually(Effect.sync(() => output), (o) => o.includes("wagate all on") || child.exitCode !== null, 90_000)
      assert.include(output, "wagate all on", output)
      yield* eventually(
        Effect.promise(() => fetch(`http://127.0.0.1:${env.HTTP_PORT}/api/status`).then((r) => r.status, () => 0)),
        (status) => status === 200,
        60_000
      )
      return gateway
    }),
    (gateway) => Effect.sync(() => gateway.child.exitCode === null && gateway.child.kill("SIGKILL"))
  )

const exited = (child: ChildProcess) =>
  Effect.async<{ readonly code: number | null; readonly at: number }>((resume) => {
    if (child.exitCode !== null) return resume(Effect.succeed({ code: child.exitCode, at: Date.now() }))
    child.once("exit", (code) => resume(Effect.succeed({ code, at: Date.now() })))
  })

const send = (url: string, key: string, text: string) =>
  Effect.promise(() =>
    fetch(`${url}/api/v1/messages/send`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ to: "77019990111", text })
    }).then(async (r) => ({ status: r.status, body: await r.json() as any }), (e) => ({ status: 0, body: String(e) }))
  )

/** A fresh database, free ports and the environment of a gateway on them; its ops client. */
const setup = Effect.gen(function*() {
  const database = yield* freshDatabase
  const [{ name }] = yield* Effect.orDie(Effect.provide(
    Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ name: string }>`SELECT current_database() AS name`),
    database
  ))
  const databaseUrl = new URL(process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test")
  databaseUrl.pathname = `/${name}`
  const [httpPort, runnerPort] = [yield* freePort, yield* freePort]
  const url = `http://127.0.0.1:${httpPort}`
  const env = {
    DATABASE_URL: databaseUrl.toString(),
    DATA_DIR: mkdtempSync(join(tmpdir(), "wagate-stuck-")),
    OPERATOR_TOKEN,
    WEBHOOK_SECRET_KEY,
    WA_DRIVER: "simulator",
    HTTP_HOST: "127.0.0.1",
    HTTP_PORT: String(httpPort),
    RUNNER_HOST: "127.0.0.1",
    RUNNER_LISTEN_HOST: "127.0.0.1",
    RUNNER_PORT: String(runnerPort),
    SHUTDOWN_TIMEOUT_MS: String(BOUND_MS),
    ENTITY_TIMEOUT_MS: "2000"
  }
  const ops = yield* OpsClient.make({ baseUrl: url, token: OPERATOR_TOKEN }).pipe(
    Effect.provide(yield* Layer.build(NodeHttpClient.layerUndici))
  )
  return { databaseUrl: databaseUrl.toString(), url, env, ops }
})

/** SIGTERM; how the process ended and how long it took. */
const terminate = (gateway: Gateway) =>
  Effect.gen(function*() {
    const signalled = Date.now()
    gateway.child.kill("SIGTERM")
    const { code, at } = yield* exited(gateway.child).pipe(Effect.timeout(BOUND_MS + 20_000), Effect.orDie)
    return { code, took: at - signalled }
  })

/** A replacement on the same ports starts cleanly, links the number and sends from it; then stops. */
const replacement = (
  context: Effect.Effect.Success<typeof setup>,
  numberId: number,
  numberKey: string
) =>
  Effect.gen(function*() {
    const second = yield* startGateway(context.env)
    assert.notInclude(second.output(), "EADDRINUSE")
    yield* linked(context.ops, numberId)
    const after = yield* eventually(send(context.url, numberKey, "after"), (a) => a.status === 200, 30_000)
    assert.strictEqual(after.status, 200, JSON.stringify(after.body))
    const stop = yield* terminate(second)
    assert.strictEqual(stop.code, 0, second.output())
  })

describe("shutdown with a stuck number entity", () => {
  it.scopedLive("a send stuck in PostgreSQL: SIGTERM stops gracefully within the bound; a replacement serves the number", () =>
    Effect.gen(function*() {
      const context = yield* setup
      const first = yield* startGateway(context.env)
      const acme = yield* provision(context.ops)
      const numberKey = acme.numberKeys[0]!
      assert.strictEqual((yield* send(context.url, numberKey, "before")).status, 200)

      // Every write of a message now waits for the test's lock: the entity's send is stuck inside it.
      const locker = new pg.Client({ connectionString: context.databaseUrl })
      yield* Effect.acquireRelease(
        Effect.promise(async () => {
          await locker.connect()
          await locker.query("BEGIN")
          await locker.query("LOCK TABLE messages IN EXCLUSIVE MODE")
        }),
        () => Effect.promise(() => locker.end().catch(() => undefined))
      )
      const stuckSend = yield* Effect.fork(send(context.url, numberKey, "stuck"))
      yield* eventually(
        Effect.promise(() =>
          locker.query(
            `SELECT count(*)::int AS n FROM pg_stat_activity
             WHERE datname = current_database() AND application_name = 'wagate' AND wait_event_type = 'Lock'`
          ).then((r) => r.rows[0].n as number)
        ),
        (n) => n > 0,
        20_000
      )

      const { code, took } = yield* terminate(first)
      console.log(`[stuck in PostgreSQL] exit ${code} after ${took} ms (bound ${BOUND_MS} ms)`)
      // Within the bound, plus the time a loaded machine takes to run the exit itself.
      assert.isBelow(took, BOUND_MS + 3_000, first.output())
      yield* Effect.promise(() => locker.query("ROLLBACK"))
      yield* stuckSend.await
      yield* replacement(context, acme.numbers[0]!.id, numberKey)
    }), { timeout: 240_000 })

  it.scopedLive("an entity wedged in a step that cannot be interrupted: SIGTERM exits at the bound; a replacement serves the number", () =>
    Effect.gen(function*() {
      const context = yield* setup
      const first = yield* startGateway(context.env, "test/e2e/support/StuckGateway.ts")
      const acme = yield* provision(context.ops)
      const numberKey = acme.numberKeys[0]!
      assert.strictEqual((yield* send(context.url, numberKey, "before")).status, 200)
      // The entity never answers: the request gives up after ENTITY_TIMEOUT_MS, the entity stays wedged.
      const wedged = yield* send(context.url, numberKey, "wedge")
      assert.strictEqual(`${wedged.status} ${wedged.body.code}`, "503 capacity")

      const { code, took } = yield* terminate(first)
      console.log(`[wedged entity] exit ${code} after ${took} ms (bound ${BOUND_MS} ms)`)
      assert.strictEqual(code, 1, first.output())
      assert.include(first.output(), `still stopping ${BOUND_MS} ms after SIGTERM; exiting`)
      assert.isAtLeast(took, BOUND_MS - 100)
      assert.isBelow(took, BOUND_MS + 3_000)
      yield* replacement(context, acme.numbers[0]!.id, numberKey)
    }), { timeout: 240_000 })
})
