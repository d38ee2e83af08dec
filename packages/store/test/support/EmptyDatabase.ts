/**
 * For the tests of a migration: a fresh database with none of the schema, migrated as far as the
 * test asks, so rows can be written in the shape they had before the migration runs.
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Migrator from "@effect/sql/Migrator"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { randomBytes } from "node:crypto"
import * as Migrations from "../../src/Migrations.js"

const testServerUrl = process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test"

/** A fresh empty database on the test server for the scope. */
export const emptyDatabase = Effect.gen(function*() {
  const name = `wagate_t_${randomBytes(6).toString("hex")}`
  const admin = yield* PgClient.make({ url: Redacted.make(testServerUrl), maxConnections: 1 })
  yield* Effect.acquireRelease(
    admin.unsafe(`CREATE DATABASE ${name}`),
    () => admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).pipe(Effect.ignore)
  )
  const target = new URL(testServerUrl)
  target.pathname = `/${name}`
  return yield* Layer.build(PgClient.layer({ url: Redacted.make(target.toString()), maxConnections: 2 }))
}).pipe(Effect.provide(Reactivity.layer))

/** Runs the migrations numbered up to `last`, as a gateway of that version would. */
export const migrateUpTo = (last: number) =>
  Effect.flatMap(Migrations.loader, (all) =>
    Migrator.make({})({ loader: Effect.succeed(all.filter(([id]) => id <= last)), table: "wagate_migrations" }))
