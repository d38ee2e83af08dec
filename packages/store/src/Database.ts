/**
 * Where the data lives: a PostgreSQL server (`DATABASE_URL`), or the embedded default, PGlite
 * served over a loopback socket so the same `@effect/sql-pg` code runs on both.
 *
 * @since 1.0.0
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as SqlClient from "@effect/sql/SqlClient"
import { PGlite } from "@electric-sql/pglite"
import { PGLiteSocketServer } from "@electric-sql/pglite-socket"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { randomBytes } from "node:crypto"
import { chmodSync, mkdirSync, readdirSync } from "node:fs"
import { join } from "node:path"
import * as Migrations from "./Migrations.js"

/**
 * Which kind of database this process talks to. The embedded one allows one process and one
 * connection (see docs/embedded.md).
 *
 * @since 1.0.0
 */
export class DatabaseKind extends Context.Tag("@wagate/store/DatabaseKind")<DatabaseKind, "postgres" | "embedded">() {}

/** @since 1.0.0 */
export type Database = PgClient.PgClient | SqlClient.SqlClient | DatabaseKind

/**
 * A PostgreSQL server, migrated at start-up.
 *
 * @since 1.0.0
 */
export const layerPostgres = (options: {
  readonly url: Redacted.Redacted
  readonly maxConnections?: number | undefined
  /** The sessions' `application_name` (default `wagate`); a runner names itself, see RunnerLiveness. */
  readonly applicationName?: string | undefined
}): Layer.Layer<Database, unknown> =>
  Migrations.layer.pipe(
    Layer.provideMerge(PgClient.layer({
      url: options.url,
      maxConnections: options.maxConnections ?? 10,
      applicationName: options.applicationName ?? "wagate"
    })),
    Layer.provideMerge(Layer.succeed(DatabaseKind, "postgres"))
  )

/** Directories 0700 and files 0600 under `root`, `root` included. */
const restrictTree = (root: string) => {
  const pending = [root]
  while (pending.length > 0) {
    const dir = pending.pop()!
    chmodSync(dir, 0o700)
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) pending.push(path)
      else if (entry.isFile()) chmodSync(path, 0o600)
    }
  }
}

/**
 * The embedded default: PGlite kept in `dataDir` (in memory without one), served on a loopback
 * port to one pooled connection.
 *
 * @since 1.0.0
 */
export const layerEmbedded = (options: { readonly dataDir?: string | undefined }): Layer.Layer<Database, unknown> =>
  Layer.unwrapScoped(Effect.gen(function*() {
    const port = yield* Effect.acquireRelease(
      Effect.promise(async () => {
        if (options.dataDir) mkdirSync(options.dataDir, { recursive: true, mode: 0o700 })
        const db = await PGlite.create(options.dataDir ?? "memory://")
        // PGlite writes its files world-readable (0666): only the gateway's user may read them.
        if (options.dataDir) restrictTree(options.dataDir)
        const server = new PGLiteSocketServer({ db, host: "127.0.0.1", port: 0 })
        await server.start()
        return { db, server, port: Number(server.getServerConn().split(":").pop()) }
      }),
      ({ db, server }) => Effect.promise(async () => {
        await server.stop()
        await db.close()
      })
    )
    return Migrations.layer.pipe(
      Layer.provideMerge(PgClient.layer({
        host: "127.0.0.1",
        port: port.port,
        username: "postgres",
        database: "postgres",
        maxConnections: 1,
        applicationName: "wagate"
      })),
      Layer.provideMerge(Layer.succeed(DatabaseKind, "embedded"))
    )
  }))

/**
 * A fresh database on the test server (`TEST_DATABASE_URL`, default the local `test` database),
 * migrated, and dropped when the layer is released; suites never see each other's data.
 *
 * @since 1.0.0
 */
export const layerTest: Layer.Layer<Database, unknown> = Layer.unwrapScoped(Effect.gen(function*() {
  const url = testServerUrl()
  const name = `wagate_t_${randomBytes(6).toString("hex")}`
  const admin = yield* PgClient.make({ url: Redacted.make(url), maxConnections: 1 })
  yield* Effect.acquireRelease(
    admin.unsafe(`CREATE DATABASE ${name}`),
    () => admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).pipe(Effect.ignore)
  )
  const target = new URL(url)
  target.pathname = `/${name}`
  return layerPostgres({ url: Redacted.make(target.toString()), maxConnections: 4 })
}).pipe(Effect.provide(Reactivity.layer)))

/**
 * The embedded database in memory, for running the store tests on both kinds.
 *
 * @since 1.0.0
 */
export const layerEmbeddedTest: Layer.Layer<Database, unknown> = layerEmbedded({})

const testServerUrl = () => process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test"
