/**
 * A transaction its fiber left open (stuck, or a bug) is ended by PostgreSQL once it has been idle
 * for the pool's limit: its locks are freed and its connection is not handed out again.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Database from "../src/Database.js"

const BOUND_MS = 500

describe("a transaction left open", () => {
  it.scopedLive("is ended by the server once idle past the limit: another session gets its lock, and the pool serves on", () =>
    Effect.gen(function*() {
      const url = Redacted.make(yield* Database.scratchDatabase)
      const other = Context.get(yield* Layer.build(Database.layerPostgres({ url, maxConnections: 1 })), SqlClient.SqlClient)
      const sql = Context.get(
        yield* Layer.build(Database.layerPostgres({ url, maxConnections: 2, idleInTransactionTimeoutMs: BOUND_MS })),
        SqlClient.SqlClient
      )
      const [setting] = yield* sql<{ timeout: string }>`SELECT current_setting('idle_in_transaction_session_timeout') AS timeout`
      assert.strictEqual(setting.timeout, `${BOUND_MS}ms`)
      // Another pool, without the setting, keeps the server's (none).
      const [unset] = yield* other<{ timeout: string }>`SELECT current_setting('idle_in_transaction_session_timeout') AS timeout`
      assert.strictEqual(unset.timeout, "0")

      yield* other`CREATE TABLE held (id int PRIMARY KEY)`
      yield* other`INSERT INTO held VALUES (1)`
      // A fiber takes a row lock in a transaction, then stops without ending it.
      const locked = yield* Deferred.make<void>()
      const resume = yield* Deferred.make<void>()
      const stuck = yield* Effect.fork(sql.withTransaction(Effect.gen(function*() {
        yield* sql`SELECT id FROM held WHERE id = 1 FOR UPDATE`
        yield* Deferred.succeed(locked, undefined)
        yield* Deferred.await(resume)
        yield* sql`SELECT 1`
      })))
      yield* Deferred.await(locked)

      // Without the limit this waited for as long as the fiber was stuck.
      const [elapsed] = yield* Effect.timed(other`UPDATE held SET id = 2 WHERE id = 1`.pipe(Effect.timeoutFail({
        duration: "20 seconds",
        onTimeout: () => new Error("the lock of the transaction left open was never freed")
      })))
      assert.isAtLeast(Duration.toMillis(elapsed), BOUND_MS * 0.8)
      // The stuck transaction was rolled back: it changes nothing when its fiber goes on.
      yield* Deferred.succeed(resume, undefined)
      // Its session is gone: the statement fails, and so does the rollback after it.
      const ended = yield* Fiber.await(stuck)
      assert.isTrue(Exit.isFailure(ended))
      const rows = yield* other<{ id: number }>`SELECT id FROM held`
      assert.deepStrictEqual(rows.map((r) => r.id), [2])

      // The pool's connections serve on (the ended session is not handed out again).
      const answers = yield* Effect.all(Array.from({ length: 4 }, () => sql<{ n: number }>`SELECT 1 AS n`), { concurrency: 2 })
      assert.deepStrictEqual(answers.map(([row]) => row.n), [1, 1, 1, 1])
    }), { timeout: 60_000 })
})
