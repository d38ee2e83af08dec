/**
 * A process of an older version refuses a database a newer release migrated, even when it starts
 * while that release is still migrating: it waits for the migration's table lock, then sees it.
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
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { eventually } from "../../../test/support/Fixtures.js"
import * as Database from "../src/Database.js"
import * as Migrations from "../src/Migrations.js"

describe("a database migrated by a newer release", () => {
  it.scopedLive("is refused by a process that starts while the newer one migrates", () =>
    Effect.gen(function*() {
      const url = Redacted.make(yield* Database.scratchDatabase)
      const sql = Context.get(yield* Layer.build(Database.layerPostgres({ url, maxConnections: 2 })), SqlClient.SqlClient)
      // The newer release, in the middle of a migration: it holds the table's lock.
      const locked = yield* Deferred.make<void>()
      const migrated = yield* Deferred.make<void>()
      const newer = yield* Effect.fork(sql.withTransaction(Effect.gen(function*() {
        yield* sql`LOCK TABLE wagate_migrations IN ACCESS EXCLUSIVE MODE`
        yield* Deferred.succeed(locked, undefined)
        yield* sql`INSERT INTO wagate_migrations (migration_id, name) VALUES (9999, 'from_a_newer_release')`
        yield* Deferred.await(migrated)
      })))
      // The older process starts once the lock is held: before it, its migrator could find the table free.
      yield* Deferred.await(locked)
      const older = yield* Effect.fork(Effect.exit(Layer.build(Database.layerPostgres({ url, maxConnections: 1, applicationName: "older" }))))
      yield* eventually(
        sql<{ waiting: number }>`SELECT count(*)::int AS waiting FROM pg_stat_activity
          WHERE application_name = 'older' AND wait_event_type = 'Lock'`,
        ([row]) => row.waiting === 1,
        30_000
      )
      yield* Deferred.succeed(migrated, undefined)
      yield* Fiber.join(newer)

      const [id, name] = (yield* Migrations.loader).at(-1)!
      const exit = yield* Fiber.join(older)
      assert.isTrue(Exit.isFailure(exit), "the older process started")
      const error = Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause)) : undefined
      assert.strictEqual((error as any)?._tag, "DatabaseNewer", String(exit))
      assert.strictEqual(
        (error as Error).message,
        "The database was migrated by a newer release of wagate: its newest migration is 9999_from_a_newer_release, " +
          `this version knows up to ${String(id).padStart(4, "0")}_${name}. Run that release or a later one, or restore the backup taken ` +
          "before the upgrade (see Downgrading in docs/operations.md)."
      )
    }), { timeout: 60_000 })
})
