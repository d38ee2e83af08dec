/**
 * Where the data lives: a PostgreSQL server (`DATABASE_URL`), or the embedded default, PGlite
 * served over a loopback socket so the same `@effect/sql-pg` code runs on both.
 *
 * @since 1.0.0
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import { PGlite } from "@electric-sql/pglite"
import { PGLiteSocketServer } from "@electric-sql/pglite-socket"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import { randomBytes } from "node:crypto"
import Pg from "pg"
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

/**
 * The connection pool under the SQL client, for what `@effect/sql` has no statement for: the
 * history's CSV is written by PostgreSQL itself (`COPY ... TO STDOUT`, see HistoryRows).
 *
 * @since 1.0.0
 */
export class DatabasePool extends Context.Tag("@wagate/store/DatabasePool")<DatabasePool, Pg.Pool>() {}

/**
 * A session of its own, opened as the pool's sessions are (the same server, start-up settings,
 * TCP keep-alive, and bound on an answer that does not come), for what holds one for long: the
 * listening for notifications (Notifications). It is closed with the scope.
 *
 * @since 1.0.0
 */
export class DatabaseSession extends Context.Tag("@wagate/store/DatabaseSession")<
  DatabaseSession,
  Effect.Effect<Pg.Client, SqlError, Scope.Scope>
>() {}

/**
 * A statement on a session of its own ({@link DatabaseSession}), its rows; in the callback form,
 * the one the no-answer bound of the session's client watches.
 *
 * @since 1.0.0
 */
export const sessionQuery = (client: Pg.Client, text: string, values: ReadonlyArray<unknown> = []) =>
  Effect.async<ReadonlyArray<Record<string, unknown>>, SqlError>((resume) => {
    client.query(text, [...values], (error: Error | null, result: Pg.QueryResult | undefined) =>
      resume(
        error === null
          ? Effect.succeed(result?.rows ?? [])
          : Effect.fail(new SqlError({ cause: error, message: `${text.trim().split("\n")[0]} failed` }))
      ))
  })

/**
 * What every process does once per database at start-up, the first time alone: creating the
 * tables it needs when they are missing (the gateway's migrations, the cluster's own tables).
 * PostgreSQL lets two sessions that create the same table at once collide (`relation ... already
 * exists`, or `duplicate key value violates unique constraint "pg_type_typname_nsp_index"` for
 * `CREATE TABLE IF NOT EXISTS`), which would end the start of the processes of a deployment
 * started all at once on a fresh database. `holding` runs its effect under one advisory lock of
 * the database, so the others wait and then find the tables made.
 *
 * @since 1.0.0
 */
export class StartupLock extends Context.Tag("@wagate/store/StartupLock")<StartupLock, {
  readonly holding: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | SqlError, R>
}>() {}

/**
 * `layer` built under the {@link StartupLock}: its construction creates tables (the cluster's
 * storage does).
 *
 * @since 1.0.0
 */
export const madeAlone = <A, E, R>(layer: Layer.Layer<A, E, R>): Layer.Layer<A, E | SqlError, R | StartupLock> =>
  Layer.scopedContext(Effect.flatMap(StartupLock, (lock) => lock.holding(Layer.build(layer))))

/** @since 1.0.0 */
export type Database =
  | PgClient.PgClient
  | SqlClient.SqlClient
  | DatabaseKind
  | DatabasePool
  | DatabaseSession
  | StartupLock

// The two-key form of advisory locks, apart from the cluster's single-key shard locks (which
// StartGate counts) and the exports' key space.
const STARTUP_LOCK_SPACE = 0x77737470 // "wstp"

/**
 * The lock on a session of its own, opened for the effect and closed after it (which frees the
 * lock), so neither a pool's connection nor its statement time limit is taken by the wait.
 */
const startupLock = (config: Pg.ClientConfig) =>
  StartupLock.of({
    holding: (effect) =>
      Effect.acquireUseRelease(
        Effect.tryPromise({
          try: async () => {
            // Connecting is bounded as the pool's first check is; the wait for the lock is not.
            const client = new Pg.Client({ ...config, connectionTimeoutMillis: 5_000 })
            client.on("error", () => {})
            await client.connect()
            return client
          },
          catch: (cause) => new SqlError({ cause, message: "PgClient: Failed to connect" })
        }).pipe(Effect.tap((client) =>
          Effect.tryPromise({
            try: () => client.query("SELECT pg_advisory_lock($1, 0)", [STARTUP_LOCK_SPACE]),
            catch: (cause) => new SqlError({ cause, message: "Could not take the database's start-up lock" })
          }).pipe(Effect.tapError(() => Effect.promise(() => client.end().catch(() => {}))))
        )),
        () => effect,
        (client) => Effect.promise(() => client.end().catch(() => {}))
      )
  })

/** The embedded database serves one process: nobody to wait for. */
const alone = StartupLock.of({ holding: (effect) => effect })

/**
 * Clients that close their connection when the server has not answered a query within
 * `noAnswerMs`: the query fails ("Connection terminated"), and the pool opens a new connection in
 * its place instead of handing out one still waiting for an answer that may never come. pg's own
 * `query_timeout` fails the query but keeps the connection waiting, and its timer outlives a
 * `COPY` (HistoryRows), which never reports its end to it.
 */
const closedWithoutAnswer = (noAnswerMs: number) =>
  class ClosedWithoutAnswer extends Pg.Client {
    override query(...args: Array<any>): any {
      const last = args.length - 1
      const callback = args[last]
      if (typeof callback === "function") {
        // With a query under way, `end` destroys the socket at once, which fails the query.
        const timer = setTimeout(() => this.end().catch(() => {}), noAnswerMs)
        timer.unref()
        args[last] = (error: unknown, result: unknown) => {
          clearTimeout(timer)
          callback(error, result)
        }
      }
      return (super.query as (...args: Array<any>) => any)(...args)
    }
  }

/** The settings of a pool, with the class of its clients. */
type PoolSettings = Pg.PoolConfig & { readonly application_name: string; readonly Client?: typeof Pg.Client | undefined }

/** A session opened as the pool's are, closed with the scope. */
const session = (config: PoolSettings) =>
  Effect.acquireRelease(
    Effect.tryPromise({
      try: async () => {
        const client = new (config.Client ?? Pg.Client)(config)
        // Its failure is seen by its user (the end of the connection); unheard, it would throw.
        client.on("error", () => {})
        await client.connect()
        return client
      },
      catch: (cause) => new SqlError({ cause, message: "PgClient: Failed to connect" })
    }),
    (client) => Effect.promise(() => client.end().catch(() => {})).pipe(Effect.interruptible, Effect.timeoutOption(1000))
  )

/**
 * A pool checked with one query before anything runs on it (as `PgClient.layer` does), and the
 * SQL client on top of it.
 */
const layerPool = (config: PoolSettings) => {
  const pool = Layer.scoped(
    DatabasePool,
    Effect.gen(function*() {
      const pool = yield* Effect.acquireRelease(
        Effect.sync(() => {
          const pool = new Pg.Pool(config)
          // An idle connection that fails is dropped by the pool, which connects anew when needed.
          pool.on("error", () => {})
          return pool
        }),
        (pool) => Effect.promise(() => pool.end()).pipe(Effect.interruptible, Effect.timeoutOption(1000))
      )
      yield* Effect.tryPromise({
        try: () => pool.query("SELECT 1"),
        catch: (cause) => new SqlError({ cause, message: "PgClient: Failed to connect" })
      }).pipe(Effect.timeoutFail({
        duration: "5 seconds",
        onTimeout: () => new SqlError({ cause: new Error("Connection timed out"), message: "PgClient: Connection timed out" })
      }))
      return pool
    })
  )
  const client = Layer.unwrapEffect(Effect.map(DatabasePool, (pool) =>
    PgClient.layerFromPool({ acquire: Effect.succeed(pool), applicationName: config.application_name })))
  return Layer.provideMerge(client, pool).pipe(Layer.merge(Layer.succeed(DatabaseSession, session(config))))
}

/** How much longer than the statement time limit the gateway waits for a server's answer. */
const NO_ANSWER_GRACE_MS = 5_000

/**
 * Migrates the database on a connection of its own, closed when done: a migration may rewrite a
 * large table, and the migrator waits for another process's migration to end (a table lock), so
 * neither is held to the statement time limit of the pool that serves requests. Under the
 * start-up lock: the migrator creates its own table first, and two processes doing that at once
 * collide.
 */
const layerMigrated = (config: PoolSettings) =>
  Layer.effectDiscard(startupLock(config).holding(Effect.scoped(Effect.flatMap(
    Layer.build(layerPool({ ...config, max: 1 })),
    (migrator) => Effect.provide(Migrations.run, migrator)
  ))))

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
  /**
   * The longest a statement of the pool runs, in milliseconds (PostgreSQL's `statement_timeout`,
   * which also bounds a wait for a lock); 0 or none: the server's own setting. Migrations are not
   * bounded by it.
   */
  readonly statementTimeoutMs?: number | undefined
  /**
   * The longest a session of the pool stays in a transaction without running a statement, in
   * milliseconds (PostgreSQL's `idle_in_transaction_session_timeout`): past it the server ends the
   * session, which rolls the transaction back and frees its locks; 0 or none: the server's own
   * setting. Migrations are not bounded by it.
   */
  readonly idleInTransactionTimeoutMs?: number | undefined
}): Layer.Layer<Database, unknown> => {
  const connection = {
    connectionString: Redacted.value(options.url),
    application_name: options.applicationName ?? "wagate",
    // A connection whose server or network path died without a word is found by the kernel's
    // probes, and fails, instead of waiting for an answer for good.
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    // Without PostgreSQL's JIT: the gateway's statements mostly read a few rows through an index,
    // but the planner's estimate of some grows with their table and crosses `jit_above_cost`, and
    // compiling them then cost 0.15-0.3 s a statement against a millisecond of work (the webhook
    // log sweep, the cluster view's webhook backlog: docs/performance.md, "JIT").
    options: "-c jit=off"
  }
  const bound = options.statementTimeoutMs ?? 0
  const idleInTransaction = options.idleInTransactionTimeoutMs ?? 0
  return layerPool({
    ...connection,
    max: options.maxConnections ?? 10,
    // Sent with the connection's start-up too: a transaction its fiber left open (stuck, or a
    // bug) is ended by the server instead of holding its locks, and its connection, for good.
    ...(idleInTransaction > 0 ? { idle_in_transaction_session_timeout: idleInTransaction } : {}),
    ...(bound > 0 ?
      {
        // Sent with the connection's start-up: every statement of every session of the pool is
        // cut short past it (SQLSTATE 57014), whatever holds it up, so a stuck statement gives its
        // connection back and its request answers 503 capacity instead of holding the pool.
        statement_timeout: bound,
        // A server that stops answering (stalled, or behind a network path that drops everything)
        // cancels nothing: the gateway gives up on the statement itself a little later, closing
        // its connection, and waits as long for a connection (a new one, or a free one of the pool).
        Client: closedWithoutAnswer(bound + NO_ANSWER_GRACE_MS),
        connectionTimeoutMillis: bound + NO_ANSWER_GRACE_MS
      } :
      {})
  }).pipe(
    Layer.provideMerge(layerMigrated(connection)),
    Layer.provideMerge(Layer.succeed(StartupLock, startupLock(connection))),
    Layer.provideMerge(Layer.succeed(DatabaseKind, "postgres"))
  )
}

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
      Layer.provideMerge(layerPool({
        host: "127.0.0.1",
        port: port.port,
        user: "postgres",
        database: "postgres",
        max: 1,
        application_name: "wagate"
      })),
      Layer.provideMerge(Layer.succeed(StartupLock, alone)),
      Layer.provideMerge(Layer.succeed(DatabaseKind, "embedded"))
    )
  }))

/**
 * The URL of a new, empty database on the test server (`TEST_DATABASE_URL`, default the local
 * `test` database), dropped when the scope closes.
 *
 * @since 1.0.0
 */
export const scratchDatabase: Effect.Effect<string, SqlError, Scope.Scope> = Effect.gen(function*() {
  const url = testServerUrl()
  const name = `wagate_t_${randomBytes(6).toString("hex")}`
  const admin = yield* PgClient.make({ url: Redacted.make(url), maxConnections: 1 })
  yield* Effect.acquireRelease(
    admin.unsafe(`CREATE DATABASE ${name}`),
    () => admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).pipe(Effect.ignore)
  )
  const target = new URL(url)
  target.pathname = `/${name}`
  return target.toString()
}).pipe(Effect.provide(Reactivity.layer))

/**
 * A fresh database on the test server (`TEST_DATABASE_URL`, default the local `test` database),
 * migrated, and dropped when the layer is released; suites never see each other's data.
 *
 * @since 1.0.0
 */
export const layerTest: Layer.Layer<Database, unknown> = Layer.unwrapScoped(
  Effect.map(scratchDatabase, (url) => layerPostgres({ url: Redacted.make(url), maxConnections: 4 }))
)

/**
 * The embedded database in memory, for running the store tests on both kinds.
 *
 * @since 1.0.0
 */
export const layerEmbeddedTest: Layer.Layer<Database, unknown> = layerEmbedded({})

const testServerUrl = () => process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test"
