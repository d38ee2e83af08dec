/**
 * The statement time limit of the pool: every statement is cut short past it, migrations are not
 * (they may rewrite a large table, or wait for another process's migration).
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Duration from "effect/Duration"
import { eventually } from "../../../test/support/Fixtures.js"
import * as TcpProxy from "../../../test/support/TcpProxy.js"
import * as Database from "../src/Database.js"

const BOUND_MS = 500

describe("the statement time limit", () => {
  it.scopedLive("a process migrating while another's migration runs past the limit waits for it and starts; its statements are then bounded", () =>
    Effect.gen(function*() {
      const url = Redacted.make(yield* Database.scratchDatabase)
      const sql = Context.get(yield* Layer.build(Database.layerPostgres({ url, maxConnections: 2 })), SqlClient.SqlClient)
      // Another process in the middle of a long migration: it holds the migrations' table lock.
      const locked = yield* Deferred.make<void>()
      const migrated = yield* Deferred.make<void>()
      const other = yield* Effect.fork(sql.withTransaction(Effect.gen(function*() {
        yield* sql`LOCK TABLE wagate_migrations IN ACCESS EXCLUSIVE MODE`
        yield* Deferred.succeed(locked, undefined)
        yield* Deferred.await(migrated)
      })))
      yield* Deferred.await(locked)
      const starting = yield* Effect.fork(Effect.exit(Layer.build(Database.layerPostgres({
        url,
        maxConnections: 2,
        applicationName: "bounded",
        statementTimeoutMs: BOUND_MS
      }))))
      // Its migrator has waited on the lock for three times the limit.
      yield* eventually(
        sql<{ waiting: number }>`SELECT count(*)::int AS waiting FROM pg_stat_activity
          WHERE application_name = 'bounded' AND wait_event_type = 'Lock'
            AND now() - query_start > make_interval(secs => ${BOUND_MS * 3 / 1000})`,
        ([row]) => row.waiting === 1,
        30_000
      )
      yield* Deferred.succeed(migrated, undefined)
      yield* Fiber.join(other)

      const started = yield* Fiber.join(starting)
      assert.isTrue(Exit.isSuccess(started), Exit.isFailure(started) ? Cause.pretty(started.cause) : "")
      const bounded = Context.get(yield* Exit.isSuccess(started) ? Effect.succeed(started.value) : Effect.never, SqlClient.SqlClient)
      const [setting] = yield* bounded<{ statement_timeout: string }>`SHOW statement_timeout`
      assert.strictEqual(setting.statement_timeout, `${BOUND_MS}ms`)
      const slow = yield* Effect.flip(bounded`SELECT pg_sleep(${BOUND_MS * 4 / 1000})`)
      assert.strictEqual((slow.cause as { code?: string }).code, "57014", String(slow))
      // The pool without a limit lets the same statement finish.
      yield* sql`SELECT pg_sleep(${BOUND_MS * 2 / 1000})`
    }), { timeout: 60_000 })
  it.scopedLive("a statement the server never answers fails a little after the limit, and its connection is closed: the next statement gets another", () =>
    Effect.gen(function*() {
      const url = new URL(yield* Database.scratchDatabase)
      const proxy = yield* TcpProxy.start({ host: "127.0.0.1", port: Number(url.port) })
      url.port = String(proxy.port)
      const sql = Context.get(
        yield* Layer.build(Database.layerPostgres({ url: Redacted.make(url.toString()), maxConnections: 1, statementTimeoutMs: BOUND_MS })),
        SqlClient.SqlClient
      )
      // PostgreSQL answers; its answer never reaches the gateway, as behind a path that drops it.
      yield* proxy.holdAnswersOnSend("never answered")
      const [elapsed, error] = yield* Effect.timed(Effect.flip(sql`SELECT 'never answered' AS text`))
      assert.strictEqual((error.cause as Error).message, "Connection terminated", String(error))
      assert.isAtLeast(Duration.toMillis(elapsed), BOUND_MS)
      assert.isBelow(Duration.toMillis(elapsed), 20_000)

      yield* proxy.holdAnswersOnSend(undefined)
      // The pool's one connection still waits for that answer: closed, it is not handed out again.
      const [row] = yield* sql<{ n: number }>`SELECT 1 AS n`
      assert.strictEqual(row.n, 1)
    }), { timeout: 60_000 })
})

describe("the pool's connections", () => {
  it.scopedLive("run without PostgreSQL's JIT, whose compiling cost index lookups of large tables 0.15-0.3 s each", () =>
    Effect.gen(function*() {
      const url = Redacted.make(yield* Database.scratchDatabase)
      const sql = Context.get(yield* Layer.build(Database.layerPostgres({ url, maxConnections: 2 })), SqlClient.SqlClient)
      const shown = yield* Effect.all([sql<{ jit: string }>`SHOW jit`, sql.withTransaction(sql<{ jit: string }>`SHOW jit`)], {
        concurrency: 2
      })
      assert.deepStrictEqual(shown.map(([row]) => row!.jit), ["off", "off"])
    }))
})
