/**
 * The cabinet's owners, their sessions and their one-time links. Secrets (session ids, link
 * tokens) arrive here already hashed; passwords arrive as Argon2id hashes.
 *
 * @since 1.0.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import { AccountId } from "@wagate/domain/Ids"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { EmailTaken } from "./Accounts.js"
import { Instant, Int8, NullOrInstant, NullOrInt8, NullOrString } from "./Columns.js"
import { iso, isoOrNull } from "./Time.js"

/** @since 1.0.0 */
export interface CabinetUser {
  readonly accountId: AccountId
  readonly email: string
  readonly company: string
  /** Null: the account has no password yet (made by the operator). */
  readonly passwordHash: string | null
  readonly verified: boolean
}

/** @since 1.0.0 */
export interface CabinetSession {
  readonly accountId: AccountId
  readonly email: string
  readonly company: string
  readonly csrf: string
}

/** What a one-time link is for. @since 1.0.0 */
export const TokenKind = Schema.Literal("verify", "reset")
/** @since 1.0.0 */
export type TokenKind = typeof TokenKind.Type

/** A key of the account as the cabinet lists it (never the key itself). @since 1.0.0 */
export interface KeyListing {
  readonly id: number
  readonly prefix: string
  readonly number_id: number | null
  readonly number_phone: string | null
  readonly created_at: string
  readonly last_used_at: string | null
}

const UserRow = Schema.Struct({
  id: Int8,
  email: Schema.String,
  company: Schema.String,
  password_hash: NullOrString,
  verified_at: NullOrInstant
})

const SessionRow = Schema.Struct({
  account_id: Int8,
  csrf: Schema.String,
  email: Schema.String,
  company: Schema.String
})

const KeyRow = Schema.Struct({
  id: Int8,
  prefix: Schema.String,
  number_id: NullOrInt8,
  phone: NullOrString,
  created_at: Instant,
  last_used_at: NullOrInstant
})

const AccountIdRow = Schema.Struct({ account_id: Int8 })

/** PostgreSQL refused a duplicate (SQLSTATE 23505). */
const isUniqueViolation = (e: unknown) =>
  Predicate.hasProperty(e, "cause") && Predicate.hasProperty(e.cause, "code") && e.cause.code === "23505"

/** @since 1.0.0 */
export class CabinetUsers extends Effect.Service<CabinetUsers>()("@wagate/store/CabinetUsers", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const insertAccount = SqlSchema.single({
      Request: Schema.Struct({ email: Schema.String, company: Schema.String }),
      Result: Schema.Struct({ id: Int8 }),
      execute: ({ company, email }) => sql`INSERT INTO accounts (email, company) VALUES (${email}, ${company}) RETURNING id`
    })

    /** A new account with its owner, not yet confirmed. */
    const signUp = Effect.fn("CabinetUsers.signUp")(function*(
      input: { readonly email: string; readonly company: string; readonly passwordHash: string }
    ) {
      return yield* Effect.gen(function*() {
        const row = yield* insertAccount(input).pipe(
          Effect.catchIf(isUniqueViolation, () => new EmailTaken({ email: input.email }))
        )
        const accountId = AccountId.make(row.id)
        yield* sql`INSERT INTO cabinet_users (account_id, password_hash) VALUES (${accountId}, ${input.passwordHash})`
        return accountId
      }).pipe(
        sql.withTransaction,
        Effect.catchTags({ SqlError: Effect.die, ParseError: Effect.die, NoSuchElementException: Effect.die })
      )
    })

    const findByEmail = SqlSchema.findOne({
      Request: Schema.String,
      Result: UserRow,
      execute: (email) =>
        sql`
          SELECT a.id, a.email, a.company, u.password_hash, u.verified_at
          FROM accounts a LEFT JOIN cabinet_users u ON u.account_id = a.id
          WHERE lower(a.email) = lower(${email})`
    })

    const byEmail = Effect.fn("CabinetUsers.byEmail")(function*(email: string) {
      const row = yield* findByEmail(email)
      return Option.map(row, (r): CabinetUser => ({
        accountId: AccountId.make(r.id),
        email: r.email,
        company: r.company,
        passwordHash: r.password_hash,
        verified: r.verified_at !== null
      }))
    }, Effect.orDie)

    const findPasswordHash = SqlSchema.findOne({
      Request: Schema.Number,
      Result: Schema.Struct({ password_hash: NullOrString }),
      execute: (accountId) => sql`SELECT password_hash FROM cabinet_users WHERE account_id = ${accountId}`
    })

    const passwordHash = Effect.fn("CabinetUsers.passwordHash")(function*(accountId: AccountId) {
      const row = yield* findPasswordHash(accountId)
      return Option.match(row, { onNone: () => null, onSome: (r) => r.password_hash })
    }, Effect.orDie)

    /** Sets the password (confirming the email, since only its owner got here) and ends every session. */
    const setPassword = Effect.fn("CabinetUsers.setPassword")(function*(accountId: AccountId, hash: string) {
      yield* sql`
        INSERT INTO cabinet_users (account_id, password_hash, verified_at, password_changed_at)
        VALUES (${accountId}, ${hash}, now(), now())
        ON CONFLICT (account_id) DO UPDATE SET password_hash = ${hash},
          verified_at = coalesce(cabinet_users.verified_at, now()), password_changed_at = now()`
      yield* sql`DELETE FROM cabinet_sessions WHERE account_id = ${accountId}`
      // A link mailed before (to confirm the email, to set a password) would sign in, or set a
      // password, past this change: every one still unspent ends with it.
      yield* sql`UPDATE cabinet_tokens SET used_at = now() WHERE account_id = ${accountId} AND used_at IS NULL`
    }, sql.withTransaction, Effect.orDie)

    const verify = Effect.fn("CabinetUsers.verify")(function*(accountId: AccountId) {
      yield* sql`UPDATE cabinet_users SET verified_at = coalesce(verified_at, now()) WHERE account_id = ${accountId}`
    }, Effect.orDie)

    const createSession = Effect.fn("CabinetUsers.createSession")(function*(
      input: { readonly idHash: Buffer; readonly accountId: AccountId; readonly csrf: string; readonly expiresAt: Date }
    ) {
      yield* sql`
        INSERT INTO cabinet_sessions (id_hash, account_id, csrf, expires_at)
        VALUES (${input.idHash}, ${input.accountId}, ${input.csrf}, ${input.expiresAt})`
    }, Effect.orDie)

    /** The live session with this id hash; it is kept alive by use (idle for `idleMs`, it ends). */
    const touchSession = SqlSchema.findOne({
      Request: Schema.Struct({ idHash: Schema.Uint8ArrayFromSelf, now: Schema.DateFromSelf, idleSince: Schema.DateFromSelf }),
      Result: SessionRow,
      execute: ({ idHash, idleSince, now }) =>
        sql`
          UPDATE cabinet_sessions s SET last_seen_at = ${now}
          FROM accounts a
          WHERE s.id_hash = ${idHash} AND a.id = s.account_id
            AND s.expires_at > ${now} AND s.last_seen_at > ${idleSince}
          RETURNING s.account_id, s.csrf, a.email, a.company`
    })

    const session = Effect.fn("CabinetUsers.session")(function*(idHash: Buffer, now: Date, idleMs: number) {
      const row = yield* touchSession({ idHash, now, idleSince: new Date(now.getTime() - idleMs) })
      return Option.map(row, (r): CabinetSession => ({
        accountId: AccountId.make(r.account_id),
        csrf: r.csrf,
        email: r.email,
        company: r.company
      }))
    }, Effect.orDie)

    /** Whether the session is still live, without counting this look as a use. */
    const sessionLive = Effect.fn("CabinetUsers.sessionLive")(function*(idHash: Buffer, now: Date, idleMs: number) {
      const rows = yield* sql`
        SELECT 1 FROM cabinet_sessions
        WHERE id_hash = ${idHash} AND expires_at > ${now} AND last_seen_at > ${new Date(now.getTime() - idleMs)}`
      return rows.length > 0
    }, Effect.orDie)

    const endSession = Effect.fn("CabinetUsers.endSession")(function*(idHash: Buffer) {
      yield* sql`DELETE FROM cabinet_sessions WHERE id_hash = ${idHash}`
    }, Effect.orDie)

    const createToken = Effect.fn("CabinetUsers.createToken")(function*(
      input: { readonly hash: Buffer; readonly accountId: AccountId; readonly kind: TokenKind; readonly expiresAt: Date }
    ) {
      yield* sql`
        INSERT INTO cabinet_tokens (hash, account_id, kind, expires_at)
        VALUES (${input.hash}, ${input.accountId}, ${input.kind}, ${input.expiresAt})`
    }, Effect.orDie)

    /**
     * Spends a one-time link: the account it was for, once, while it has not expired. The
     * account's other unspent links of its kind are spent with it: an older confirmation mail
     * would sign in again, an older reset link set another password.
     */
    const spendToken = SqlSchema.findOne({
      Request: Schema.Struct({ hash: Schema.Uint8ArrayFromSelf, kind: TokenKind, now: Schema.DateFromSelf }),
      Result: AccountIdRow,
      execute: ({ hash, kind, now }) =>
        sql`
          WITH spent AS (
            UPDATE cabinet_tokens SET used_at = ${now}
            WHERE hash = ${hash} AND kind = ${kind} AND used_at IS NULL AND expires_at > ${now}
            RETURNING account_id
          ), others AS (
            UPDATE cabinet_tokens SET used_at = ${now}
            WHERE account_id IN (SELECT account_id FROM spent) AND kind = ${kind} AND used_at IS NULL AND hash <> ${hash}
          )
          SELECT account_id FROM spent`
    })

    const useToken = Effect.fn("CabinetUsers.useToken")(function*(hash: Buffer, kind: TokenKind, now: Date) {
      const row = yield* spendToken({ hash, kind, now })
      return Option.map(row, (r) => AccountId.make(r.account_id))
    }, Effect.orDie)

    /** The account's live keys, newest first. */
    const findKeys = SqlSchema.findAll({
      Request: Schema.Number,
      Result: KeyRow,
      execute: (accountId) =>
        sql`
          SELECT k.id, k.prefix, k.number_id, n.phone, k.created_at, k.last_used_at
          FROM api_keys k LEFT JOIN numbers n ON n.id = k.number_id
          WHERE k.account_id = ${accountId} AND k.revoked_at IS NULL
            AND (k.number_id IS NULL OR n.deleted_at IS NULL)
          ORDER BY k.id DESC`
    })

    const keys = Effect.fn("CabinetUsers.keys")(function*(accountId: AccountId) {
      const rows = yield* findKeys(accountId)
      return rows.map((r): KeyListing => ({
        id: r.id,
        prefix: r.prefix,
        number_id: r.number_id,
        number_phone: r.phone,
        created_at: iso(r.created_at),
        last_used_at: isoOrNull(r.last_used_at)
      }))
    }, Effect.orDie)

    /** Whether the live key `keyId` belongs to the account. */
    const ownsKey = Effect.fn("CabinetUsers.ownsKey")(function*(accountId: AccountId, keyId: number) {
      const rows = yield* sql`
        SELECT 1 FROM api_keys WHERE id = ${keyId} AND account_id = ${accountId} AND revoked_at IS NULL`
      return rows.length > 0
    }, Effect.orDie)

    return {
      signUp,
      byEmail,
      passwordHash,
      setPassword,
      verify,
      createSession,
      session,
      sessionLive,
      endSession,
      createToken,
      useToken,
      keys,
      ownsKey
    } as const
  })
}) {}
