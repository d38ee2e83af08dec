/**
 * API keys: 190 random bits in base62 behind a readable prefix (`wag_acc_` for account keys,
 * `wag_num_` for number keys), stored only as a SHA-256 hash.
 *
 * @since 1.0.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import type { Principal } from "@wagate/domain/Auth"
import { AccountId, ApiKeyId, NumberId } from "@wagate/domain/Ids"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as crypto from "node:crypto"
import * as Batched from "./Batched.js"
import { Int8, NullOrInt8 } from "./Columns.js"
import { decoded } from "./Rows.js"

const LiveKey = Schema.Struct({ hash: Schema.Uint8ArrayFromSelf, id: Int8, account_id: Int8, number_id: NullOrInt8 })

const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
const SECRET_LENGTH = 32 // 32 * log2(62) ≈ 190 bits

/** @since 1.0.0 */
export const generate = (kind: "account" | "number"): string => {
  let secret = ""
  for (let i = 0; i < SECRET_LENGTH; i++) secret += ALPHABET[crypto.randomInt(ALPHABET.length)]
  return `${kind === "account" ? "wag_acc_" : "wag_num_"}${secret}`
}

/** @since 1.0.0 */
export const hash = (key: string): Buffer => crypto.hash("sha256", key, "buffer")

/** Whether a string has the shape of one of our keys (anything else cannot match a hash). @since 1.0.0 */
export const isWellFormed = (key: string): boolean => /^wag_(acc|num)_[0-9A-Za-z]{32}$/.test(key)

/** @since 1.0.0 */
export interface IssuedKey {
  readonly id: ApiKeyId
  readonly key: string
  readonly prefix: string
  readonly account_id: AccountId
  readonly number_id: NumberId | null
}

/** @since 1.0.0 */
export class ApiKeys extends Effect.Service<ApiKeys>()("@wagate/store/ApiKeys", {
  accessors: true,
  scoped: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const insertKey = SqlSchema.single({
      Request: Schema.Struct({
        accountId: Schema.Number,
        numberId: Schema.NullOr(Schema.Number),
        prefix: Schema.String,
        hash: Schema.Uint8ArrayFromSelf
      }),
      Result: Schema.Struct({ id: Int8 }),
      execute: (k) =>
        sql`
          INSERT INTO api_keys (account_id, number_id, prefix, hash)
          VALUES (${k.accountId}, ${k.numberId}, ${k.prefix}, ${k.hash})
          RETURNING id`
    })

    const insert = (accountId: AccountId, numberId: NumberId | null) =>
      Effect.gen(function*() {
        const key = generate(numberId === null ? "account" : "number")
        const prefix = key.slice(0, 12)
        const row = yield* insertKey({ accountId, numberId, prefix, hash: hash(key) })
        return { id: ApiKeyId.make(row.id), key, prefix, account_id: accountId, number_id: numberId }
      })

    /** Issues a key for the account, or for one number of it. */
    const issue = Effect.fn("ApiKeys.issue")(function*(accountId: AccountId, numberId: NumberId | null) {
      return yield* insert(accountId, numberId)
    }, Effect.orDie)

    /**
     * Revokes a key and issues its replacement with the same scope, in one transaction. Returns
     * the new key and the hash of the old one (for the revocation broadcast), or None.
     */
    const revoke = SqlSchema.findOne({
      Request: Schema.Number,
      Result: Schema.Struct({ account_id: Int8, number_id: NullOrInt8, hash: Schema.instanceOf(Buffer) }),
      execute: (keyId) =>
        sql`
          UPDATE api_keys SET revoked_at = now()
          WHERE id = ${keyId} AND revoked_at IS NULL
          RETURNING account_id, number_id, hash`
    })

    const reissue = Effect.fn("ApiKeys.reissue")(function*(keyId: ApiKeyId) {
      const revoked = yield* revoke(keyId)
      if (Option.isNone(revoked)) return Option.none()
      const old = revoked.value
      const issued = yield* insert(
        AccountId.make(old.account_id),
        old.number_id === null ? null : NumberId.make(old.number_id)
      )
      yield* sql`UPDATE api_keys SET replaced_by = ${issued.id} WHERE id = ${keyId}`
      return Option.some({ issued, revokedHash: old.hash })
    }, sql.withTransaction, Effect.orDie)

    /**
     * The principals of live keys, by the hashes of the keys (None for a hash of none). The
     * lookups of all requests go through one writer: many callers' first requests at once (after
     * a restart) cost one statement, not one each.
     */
    const liveKeys = yield* Batched.withResults((hashes: ReadonlyArray<Buffer>) =>
      decoded(LiveKey, sql`
        SELECT k.hash, k.id, k.account_id, k.number_id
        FROM api_keys k
        LEFT JOIN numbers n ON n.id = k.number_id
        WHERE k.hash IN ${sql.in(hashes)} AND k.revoked_at IS NULL
          AND (k.number_id IS NULL OR n.deleted_at IS NULL)`).pipe(
        Effect.map((rows) => {
          const byHash = new Map(rows.map((row) => [Buffer.from(row.hash).toString("hex"), row]))
          return hashes.map((h) => Option.fromNullable(byHash.get(h.toString("hex"))))
        })
      )
    )

    const findByHash = Effect.fn("ApiKeys.findByHash")(function*(keyHash: Buffer) {
      return Option.map(yield* liveKeys(keyHash), (row): Principal => ({
        keyId: ApiKeyId.make(row.id),
        accountId: AccountId.make(row.account_id),
        numberId: row.number_id === null ? null : NumberId.make(row.number_id)
      }))
    }, Effect.orDie)

    /**
     * Records that the key was used at `at` (the cabinet shows when each key was last used). The
     * keys of all requests go through one writer, one statement for whatever queued up meanwhile.
     */
    const touch = yield* Batched.make((used: ReadonlyArray<{ readonly keyId: ApiKeyId; readonly at: Date }>) =>
      sql`
        UPDATE api_keys k SET last_used_at = greatest(k.last_used_at, u.at)
        FROM unnest(${used.map((u) => u.keyId)}::bigint[], ${used.map((u) => u.at)}::timestamptz[]) AS u(id, at)
        WHERE k.id = u.id`.pipe(Effect.asVoid, Effect.orDie)
    )

    return { issue, reissue, findByHash, touch } as const
  })
}) {}
