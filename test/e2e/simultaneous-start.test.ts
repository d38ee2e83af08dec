/**
 * Every process of a deployment started at the same moment on a fresh PostgreSQL database, as
 * Kubernetes starts them: an api process and two runners waiting for each other
 * (CLUSTER_MIN_RUNNERS 2). Each one creates the tables it needs at start-up when they are missing
 * (the gateway's migrations, the cluster's own `cluster_*` tables); all come up, and none exits.
 * Two processes creating the same table at once collide in PostgreSQL, so the start-up work is
 * done one process at a time.
 */
import { assert, describe, it } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Database from "@wagate/store/Database"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { eventually } from "../support/Fixtures.js"
import { freePort } from "../support/Ports.js"
import { type DatabaseContext, freshDatabase, OPERATOR_TOKEN, sql, WEBHOOK_SECRET_KEY } from "../support/TestGateway.js"
import { type Gateway, spawnGateway } from "./support/GatewayProcess.js"

const status = (url: string) =>
  Effect.promise(() => fetch(`${url}/api/status`, { signal: AbortSignal.timeout(5_000) }).then((r) => r.status, () => 0))

type Named = readonly [string, Gateway]

const exitedEarly = (gateways: ReadonlyArray<Named>) =>
  gateways.filter(([, g]) => g.child.exitCode !== null || g.child.signalCode !== null)

const report = (gateways: ReadonlyArray<Named>) =>
  gateways.map(([name, g]) => `--- ${name} (exit ${g.child.exitCode}):\n${g.output()}`).join("\n")

/** An api process and two runners started at once on the database at `databaseUrl`, not waited for. */
const spawnDeployment = (databaseUrl: string) =>
  Effect.gen(function*() {
    const httpPort = yield* freePort
    const common = {
      DATABASE_URL: databaseUrl,
      OPERATOR_TOKEN,
      WEBHOOK_SECRET_KEY,
      WA_DRIVER: "simulator",
      HTTP_HOST: "127.0.0.1",
      RUNNER_HOST: "127.0.0.1",
      RUNNER_LISTEN_HOST: "127.0.0.1",
      CLUSTER_MIN_RUNNERS: "2",
      DATA_DIR: mkdtempSync(join(tmpdir(), "wagate-simultaneous-"))
    }
    const runner = (port: number) => ({ ...common, WAGATE_ROLE: "runner", HTTP_PORT: String(port), RUNNER_PORT: String(port) })
    const [runner1, runner2] = [runner(yield* freePort), runner(yield* freePort)]
    const gateways: ReadonlyArray<Named> = yield* Effect.all([
      Effect.map(spawnGateway({ ...common, WAGATE_ROLE: "api", HTTP_PORT: String(httpPort) }), (g) => ["api", g] as const),
      Effect.map(spawnGateway(runner1), (g) => ["runner 1", g] as const),
      Effect.map(spawnGateway(runner2), (g) => ["runner 2", g] as const)
    ])
    return { gateways, url: `http://127.0.0.1:${httpPort}` }
  })

/** Every process up (the api answers, both runners took their shards together), none gone. */
const allUp = (name: string, started: number, { gateways, url }: { gateways: ReadonlyArray<Named>; url: string }) =>
  Effect.gen(function*() {
    const runners = gateways.filter(([name]) => name.startsWith("runner")).map(([, g]) => g)
    yield* eventually(
      Effect.all([status(url), Effect.sync(() => runners.map((r) => r.output()))]),
      ([code, outputs]) =>
        exitedEarly(gateways).length > 0 ||
        (code === 200 && outputs.every((o) => o.includes("2 runners registered (CLUSTER_MIN_RUNNERS 2): taking shards"))),
      150_000
    )
    assert.deepStrictEqual(exitedEarly(gateways).map(([name]) => name), [], `${name}:\n${report(gateways)}`)
    assert.strictEqual(yield* status(url), 200, report(gateways))
    console.log(`[simultaneous start] ${name}: all up in ${Date.now() - started} ms`)
  })

/** Sessions of the database `name` waiting for a lock. */
const waitingForLock = (database: DatabaseContext, name: string) =>
  sql(database, (sql) => sql<{ n: number }>`
    SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = ${name} AND wait_event_type = 'Lock'`)
    .pipe(Effect.map(([row]) => row?.n ?? 0))

describe("processes started at the same moment on a fresh database", () => {
  it.live("all come up: none collides with another creating the same tables", () =>
    Effect.gen(function*() {
      // Where they meet: the processes go on from the gateway's migrations together, each to create
      // the cluster's tables, as when they all waited for one of them to migrate. The gateway's
      // schema is there; the test holds the migrations' table until all three wait for it.
      yield* Effect.scoped(Effect.gen(function*() {
        const started = Date.now()
        const database = yield* freshDatabase
        const [{ name }] = yield* sql(database, (sql) => sql<{ name: string }>`SELECT current_database() AS name`)
        const url = new URL(process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test")
        url.pathname = `/${name}`
        const held = yield* Effect.orDie(Context.get(database, SqlClient.SqlClient).reserve)
        yield* Effect.orDie(held.executeRaw("BEGIN", []))
        yield* Effect.orDie(held.executeRaw("LOCK TABLE wagate_migrations IN ACCESS EXCLUSIVE MODE", []))
        const deployment = yield* spawnDeployment(url.toString())
        yield* eventually(
          waitingForLock(database, name),
          (n) => n >= 3 || exitedEarly(deployment.gateways).length > 0,
          150_000
        )
        yield* Effect.orDie(held.executeRaw("COMMIT", []))
        yield* allUp("after waiting together", started, deployment)
      }))
      // And on a database with nothing in it: the first statements of the migrations meet too.
      yield* Effect.scoped(Effect.gen(function*() {
        const started = Date.now()
        const deployment = yield* spawnDeployment(yield* Effect.orDie(Database.scratchDatabase))
        yield* allUp("on an empty database", started, deployment)
      }))
    }), { timeout: 400_000 })
})
