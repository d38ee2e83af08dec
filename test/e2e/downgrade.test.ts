/**
 * A gateway started on a database a newer release migrated (a downgrade) does not start: exit
 * status 1 and one line naming the database's newest migration and this version's, on PostgreSQL
 * and on the embedded database alike.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Database from "../../packages/store/src/Database.js"
import * as Migrations from "../../packages/store/src/Migrations.js"
import { freePort } from "../support/Ports.js"
import { exited, setup, spawnGateway } from "./support/GatewayProcess.js"

/** What a newer release leaves behind: one more migration than this version has. */
const migratedFurther = (database: Layer.Layer<Database.Database, unknown>) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`INSERT INTO wagate_migrations (migration_id, name) VALUES (9999, 'from_a_newer_release')`).pipe(
      Effect.provide(database),
      Effect.orDie
    )

const refused = (env: Record<string, string>) =>
  Effect.gen(function*() {
    const gateway = yield* spawnGateway(env)
    const { code } = yield* exited(gateway.child).pipe(Effect.timeout("120 seconds"), Effect.orDie)
    const [id, name] = (yield* Migrations.loader).at(-1)!
    assert.strictEqual(code, 1, gateway.output())
    assert.include(
      gateway.output(),
      "The database was migrated by a newer release of wagate: its newest migration is 9999_from_a_newer_release, " +
        `this version knows up to ${String(id).padStart(4, "0")}_${name}.`
    )
    assert.notInclude(gateway.output(), "wagate all on")
    return gateway.output()
  })

describe("a database migrated by a newer release", () => {
  it.scopedLive("is refused at start, on PostgreSQL and on the embedded database", () =>
    Effect.gen(function*() {
      const { env } = yield* setup
      yield* migratedFurther(Database.layerPostgres({ url: Redacted.make(env.DATABASE_URL) }))
      const dataDir = join(mkdtempSync(join(tmpdir(), "wagate-downgrade-")), "data")
      yield* migratedFurther(Database.layerEmbedded({ dataDir: join(dataDir, "pg") }))
      yield* Effect.all([
        refused(env),
        refused({ DATA_DIR: dataDir, HTTP_HOST: "127.0.0.1", HTTP_PORT: String(yield* freePort), WA_DRIVER: "simulator" })
      ], { concurrency: "unbounded" })
    }), { timeout: 300_000 })
})
