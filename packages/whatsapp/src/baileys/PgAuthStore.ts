/**
 * Baileys auth state in PostgreSQL, table `wa_auth_state (number_id, kind, key_id, value jsonb)`:
 * the credentials under kind `creds`, each signal key under its Baileys kind and id. A batch of
 * writes is one transaction.
 *
 * @since 1.0.0
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { CREDS } from "./AuthCodec.js"
import { AuthStore, type DriverRows, fromBackend } from "./AuthStore.js"
import type { AuthBackend, KeyRow, WriteOp } from "./NumberAuth.js"

const decodeValues = Schema.decodeUnknown(Schema.Array(Schema.Struct({ value: Schema.String })))
const decodeKeys = Schema.decodeUnknown(Schema.Array(Schema.Struct({ key_id: Schema.String, value: Schema.String })))
const decodeProtos = Schema.decodeUnknown(Schema.Array(Schema.Struct({ proto: Schema.Uint8ArrayFromSelf })))
const decodeCount = Schema.decodeUnknown(Schema.Array(Schema.Struct({ n: Schema.Number })))

/** @since 1.0.0 */
export const backend = Effect.map(PgClient.PgClient, (sql): AuthBackend & DriverRows => {
  const upsert = (numberId: number, rows: ReadonlyArray<KeyRow>) =>
    rows.length === 0 ? Effect.void : sql`
      INSERT INTO wa_auth_state ${
      sql.insert(rows.map((r) => ({ number_id: numberId, kind: r.kind, key_id: r.id, value: r.json, updated_at: new Date() })))
    }
      ON CONFLICT (number_id, kind, key_id) DO UPDATE SET value = EXCLUDED.value, updated_at = EXCLUDED.updated_at`

  const remove = (numberId: number, rows: ReadonlyArray<KeyRow>) =>
    Effect.forEach(groupBy(rows, (r) => r.kind), ([kind, ids]) =>
      sql`DELETE FROM wa_auth_state WHERE number_id = ${numberId} AND kind = ${kind}
          AND key_id IN ${sql.in(ids.map((r) => r.id))}`, { discard: true })

  const apply = (numberId: number, op: WriteOp) => {
    switch (op._tag) {
      case "Reset":
        return sql`DELETE FROM wa_auth_state WHERE number_id = ${numberId}`
      case "Creds":
        return upsert(numberId, [{ kind: CREDS, id: "", json: op.json }])
      case "Keys": {
        // The last value of a key in the op wins (one row may not be upserted twice in a statement).
        const last = new Map(op.rows.map((r) => [`${r.kind}\u0000${r.id}`, r]))
        const rows = [...last.values()]
        return Effect.zipRight(
          upsert(numberId, rows.filter((r) => r.json !== null)),
          remove(numberId, rows.filter((r) => r.json === null))
        )
      }
    }
  }

  return {
    getValue: (key) =>
      sql`SELECT value FROM wa_driver_state WHERE key = ${key}`.pipe(
        Effect.flatMap(decodeValues),
        Effect.map((rows) => rows[0]?.value ?? null),
        Effect.orDie
      ),
    setValue: (key, value) =>
      sql`INSERT INTO wa_driver_state (key, value, updated_at) VALUES (${key}, ${value}, now())
          ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = EXCLUDED.updated_at`.pipe(
        Effect.asVoid,
        Effect.orDie
      ),
    saveSent: (numberId, id, proto) =>
      sql`INSERT INTO wa_sent_messages (number_id, wa_message_id, proto) VALUES (${numberId}, ${id}, ${Buffer.from(proto)})
          ON CONFLICT (number_id, wa_message_id) DO UPDATE SET proto = EXCLUDED.proto`.pipe(Effect.asVoid, Effect.orDie),
    findSent: (numberId, id) =>
      sql`SELECT proto FROM wa_sent_messages WHERE number_id = ${numberId} AND wa_message_id = ${id}`
        .pipe(
          Effect.flatMap(decodeProtos),
          Effect.map((rows) => rows[0]?.proto ?? null),
          Effect.orDie
        ),
    pruneSent: (before) =>
      sql`WITH gone AS (DELETE FROM wa_sent_messages WHERE created_at < ${before} RETURNING 1),
          -- Contact checks are kept at most 30 days (Sending.exists); the daily prune forgets older ones.
          checks AS (DELETE FROM wa_driver_state WHERE key LIKE 'contact-check/%' AND updated_at < now() - interval '30 days')
          SELECT count(*)::int AS n FROM gone`.pipe(
        Effect.flatMap(decodeCount),
        Effect.map((rows) => rows[0]?.n ?? 0),
        Effect.orDie
      ),
    readCreds: (numberId) =>
      Effect.map(
        sql`SELECT value::text AS value FROM wa_auth_state
          WHERE number_id = ${numberId} AND kind = ${CREDS} AND key_id = ''`.pipe(
          Effect.flatMap((rows) => Effect.orDie(decodeValues(rows)))
        ),
        (rows) => rows[0]?.value ?? null
      ),
    readKeys: (numberId, kind, ids) =>
      ids.length === 0 ? Effect.succeed([]) : Effect.map(
        sql`SELECT key_id, value::text AS value FROM wa_auth_state
          WHERE number_id = ${numberId} AND kind = ${kind} AND key_id IN ${sql.in(ids)}`.pipe(
          Effect.flatMap((rows) => Effect.orDie(decodeKeys(rows)))
        ),
        (rows) => rows.map((r) => ({ id: r.key_id, json: r.value }))
      ),
    write: (numberId, ops) =>
      Effect.forEach(ops, (op) => apply(numberId, op), { discard: true }).pipe(sql.withTransaction)
  }
})

const groupBy = <A>(items: ReadonlyArray<A>, key: (a: A) => string): Array<[string, Array<A>]> => {
  const groups = new Map<string, Array<A>>()
  for (const item of items) {
    const k = key(item)
    const group = groups.get(k)
    if (group === undefined) groups.set(k, [item])
    else group.push(item)
  }
  return [...groups]
}

/** @since 1.0.0 */
export const layer: Layer.Layer<AuthStore, never, PgClient.PgClient> = Layer.effect(
  AuthStore,
  Effect.map(backend, fromBackend)
)
