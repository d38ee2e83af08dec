/**
 * For the tests of a migration: a fresh database with none of the schema, migrated as far as the
 * test asks, so rows can be written in the shape they had before the migration runs.
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Migrator from "@effect/sql/Migrator"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Database from "../../src/Database.js"
import * as Migrations from "../../src/Migrations.js"

/** A fresh empty database on the test server for the scope. */
export const emptyDatabase = Effect.flatMap(
  Database.scratchDatabase,
  (url) => Layer.build(PgClient.layer({ url: Redacted.make(url), maxConnections: 2 }))
)

/** Runs the migrations numbered up to `last`, as a gateway of that version would. */
export const migrateUpTo = (last: number) =>
  Effect.flatMap(Migrations.loader, (all) =>
    Migrator.make({})({ loader: Effect.succeed(all.filter(([id]) => id <= last)), table: "wagate_migrations" }))
