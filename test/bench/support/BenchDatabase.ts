/**
 * The database of the GET /messages benchmark on the local PostgreSQL server: created on first
 * use, migrated, and kept so the next run skips the seeding. A run reuses it only when it holds
 * the same seed, made less than a day ago (the history ends at seeding time, so an older seed
 * would drift out of the retention period and out of the filters' `since`); otherwise it is
 * dropped and made again. `drop` removes it for good.
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Reactivity from "@effect/experimental/Reactivity"
import * as Database from "@wagate/store/Database"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"

const SERVER = process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test"
const MAX_AGE_HOURS = 24

/** What a seed was made from; a database is reused only for the same. */
export interface SeedShape {
  readonly messages: number
  readonly chats: number
  readonly days: number
}

/** The account a kept seed belongs to. */
export interface KeptSeed {
  readonly accountId: number
  readonly numbers: ReadonlyArray<{ readonly id: number; readonly phone: string }>
}

const urlOf = (name: string) => {
  const url = new URL(SERVER)
  url.pathname = `/${name}`
  return url.toString()
}

/** Runs `f` with a client on the server's default database (for CREATE and DROP DATABASE). */
const withAdmin = <A, E>(f: (admin: SqlClient.SqlClient) => Effect.Effect<A, E>) =>
  Effect.scoped(Effect.flatMap(PgClient.make({ url: Redacted.make(SERVER), maxConnections: 1 }), f)).pipe(
    Effect.provide(Reactivity.layer),
    Effect.orDie
  )

const exists = (name: string) =>
  withAdmin((admin) =>
    Effect.map(admin<{ n: number }>`SELECT count(*)::int AS n FROM pg_database WHERE datname = ${name}`, ([r]) => r.n > 0)
  )

export const drop = (name: string) =>
  withAdmin((admin) => admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))

const create = (name: string) => withAdmin((admin) => admin.unsafe(`CREATE DATABASE ${name}`))

/** The seed recorded in the database, if it matches `shape` and is recent enough. */
const keptSeed = (shape: SeedShape) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`CREATE TABLE IF NOT EXISTS bench_seed (
      account_id bigint NOT NULL, messages int NOT NULL, chats int NOT NULL, days int NOT NULL,
      seeded_at timestamptz NOT NULL)`
    const [seed] = yield* sql<{ account_id: string }>`
      SELECT s.account_id FROM bench_seed s
      WHERE s.messages = ${shape.messages} AND s.chats = ${shape.chats} AND s.days = ${shape.days}
        AND s.seeded_at > now() - make_interval(hours => ${MAX_AGE_HOURS})
        AND (SELECT count(*) FROM messages m WHERE m.account_id = s.account_id) = ${shape.messages}`
    if (seed === undefined) return Option.none<KeptSeed>()
    const numbers = yield* sql<{ id: string; phone: string }>`
      SELECT id, phone FROM numbers WHERE account_id = ${seed.account_id} AND deleted_at IS NULL ORDER BY id`
    return Option.some<KeptSeed>({
      accountId: Number(seed.account_id),
      numbers: numbers.map((n) => ({ id: Number(n.id), phone: n.phone }))
    })
  }).pipe(Effect.orDie)

/** Records that the database now holds `shape` for `accountId`. */
export const recordSeed = (accountId: number, shape: SeedShape) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`DELETE FROM bench_seed`
    yield* sql`INSERT INTO bench_seed (account_id, messages, chats, days, seeded_at)
      VALUES (${accountId}, ${shape.messages}, ${shape.chats}, ${shape.days}, now())`
  }).pipe(Effect.orDie)

/**
 * The database `name`, migrated, as a layer for the scope and a URL for the servers, with the
 * seed it already holds (None: it is new, and empty).
 */
export const open = (name: string, shape: SeedShape) =>
  Effect.gen(function*() {
    const url = urlOf(name)
    const connect = () =>
      Layer.build(Database.layerPostgres({ url: Redacted.make(url), maxConnections: 4 }).pipe(Layer.fresh))
    if (yield* exists(name)) {
      const kept = yield* Effect.scoped(Effect.flatMap(connect(), (context) => Effect.provide(keptSeed(shape), context)))
      if (Option.isSome(kept)) return { url, context: yield* connect(), kept }
      yield* drop(name)
    }
    yield* create(name)
    const context = yield* connect()
    yield* Effect.provide(keptSeed(shape), context) // creates bench_seed
    return { url, context, kept: Option.none<KeptSeed>() }
  }).pipe(Effect.orDie)
