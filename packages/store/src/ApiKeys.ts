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
import { createHash, randomInt } from "node:crypto"
import { Int8, NullOrInt8 } from "./Columns.js"

const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
const SECRET_LENGTH = 32 // 32 * log2(62) ≈ 190 bits

/** @since 1.0.0 */
export const generate = (kind: "account" | "number"): string => {
  let secret = ""
  for (let i = 0; i < SECRET_LENGTH; i++) secret += ALPHABET[randomInt(ALPHABET.length)]
  return `${kind === "account" ? "wag_acc_" : "wag_num_"}${secret}`
}

/** @since 1.0.0 */
export const hash = (key: string): Buffer => createHash("sha256").update(key).digest()

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
  effect: Effect.gen(function*() {
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

    /** The principal of a live key, by the hash of the key. */
    const liveKey = SqlSchema.findOne({
      Request: Schema.Uint8ArrayFromSelf,
      Result: Schema.Struct({ id: Int8, account_id: Int8, number_id: NullOrInt8 }),
      execute: (keyHash) =>
        sql`
          SELECT k.id, k.account_id, k.number_id
          FROM api_keys k
          LEFT JOIN numbers n ON n.id = k.number_id
          WHERE k.hash = ${keyHash} AND k.revoked_at IS NULL
            AND (k.number_id IS NULL OR n.deleted_at IS NULL)`
    })

    const findByHash = Effect.fn("ApiKeys.findByHash")(function*(keyHash: Buffer) {
      return Option.map(yield* liveKey(keyHash), (row): Principal => ({
        keyId: ApiKeyId.make(row.id),
        accountId: AccountId.make(row.account_id),
        numberId: row.number_id === null ? null : NumberId.make(row.number_id)
      }))
    }, Effect.orDie)

    /** Records that the key was used now (the cabinet shows when each key was last used). */
    const touch = Effect.fn("ApiKeys.touch")(function*(keyId: ApiKeyId, at: Date) {
      yield* sql`UPDATE api_keys SET last_used_at = ${at} WHERE id = ${keyId}`
    }, Effect.orDie)

    return { issue, reissue, findByHash, touch } as const
  })
}) {}
