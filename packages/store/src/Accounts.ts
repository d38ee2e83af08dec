/**
 * Accounts, their numbers and their money: the rows behind GET /numbers, /status, /balance, /me
 * and the operator's provisioning.
 *
 * @since 1.0.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import type { Balance } from "@wagate/domain/Account"
import { ConnectionStatus } from "@wagate/domain/Connection"
import * as Drawdown from "@wagate/domain/Drawdown"
import { AccountId, NumberId } from "@wagate/domain/Ids"
import type { LinkedNumber } from "@wagate/domain/LinkedNumber"
import * as Pricing from "@wagate/domain/Pricing"
import * as StoragePricing from "@wagate/domain/StoragePricing"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import { Instant, Int8, NullOrInstant, NullOrString, oneOf } from "./Columns.js"
import { iso, isoOrNull } from "./Time.js"

/** @since 1.0.0 */
export interface AccountRow {
  readonly id: AccountId
  readonly email: string
  readonly company: string
  readonly numbers_limit: number
  readonly created_at: string
}

/** @since 1.0.0 */
export interface NumberRow {
  readonly id: NumberId
  readonly account_id: AccountId
  readonly phone: string
  readonly status: ConnectionStatus
  readonly paused: boolean
  readonly pause_reason: Drawdown.PauseReason | null
  readonly connected_at: string | null
  readonly created_at: string
  /** The network restricted the number (server error 463 and the like) until then; null when it never did. */
  readonly restricted_until: string | null
  readonly restriction_reason: string | null
  /** Why the connection is in its status (a failure's reason), when known. */
  readonly status_reason: string | null
}

/** @since 1.0.0 */
export class EmailTaken extends Data.TaggedError("EmailTaken")<{ readonly email: string }> {}
/** @since 1.0.0 */
export class PhoneTaken extends Data.TaggedError("PhoneTaken")<{ readonly phone: string }> {}
/** @since 1.0.0 */
export class NumbersLimitReached extends Data.TaggedError("NumbersLimitReached")<{ readonly limit: number }> {}
/** @since 1.0.0 */
export class AccountNotFound extends Data.TaggedError("AccountNotFound")<{ readonly id: number }> {}

/** Money and the numbers it pays for, as of `now`. @since 1.0.0 */
export interface Funds extends Balance {
  /** When the paid period of every active number has ended. */
  readonly paidUntil: string | null
  /** Each active number's own paid period (the oldest are paid longest). */
  readonly numbersPaidUntil: ReadonlyMap<number, string>
  /** Whole days the balance covers at the daily charge, numbers paused for the balance aside (storage goes by it). */
  readonly daysCovered: number
  /** What a top-up must bring for the numbers paused for the balance to resume (0: none wait). */
  readonly toResume: number
}

/** The figures of GET /balance among the funds. @since 1.0.0 */
export const balanceFigures = (funds: Funds): Balance => ({
  balance: funds.balance,
  daily_charge: funds.daily_charge,
  days_left: funds.days_left,
  active_numbers: funds.active_numbers,
  paused_numbers: funds.paused_numbers
})

const AccountColumns = Schema.Struct({
  id: Int8,
  email: Schema.String,
  company: Schema.String,
  numbers_limit: Schema.Number,
  created_at: Instant
})

const NumberColumns = Schema.Struct({
  id: Int8,
  account_id: Int8,
  phone: Schema.String,
  status: oneOf(ConnectionStatus),
  paused: Schema.Boolean,
  pause_reason: NullOrString,
  connected_at: NullOrInstant,
  created_at: Instant,
  restricted_until: NullOrInstant,
  restriction_reason: NullOrString,
  status_reason: NullOrString
})

const ACCOUNT_COLUMNS = "id, email, company, numbers_limit, created_at"
const NUMBER_COLUMNS =
  "id, account_id, phone, status, paused, pause_reason, connected_at, created_at, restricted_until, restriction_reason, status_reason"

const toAccount = (r: typeof AccountColumns.Type): AccountRow => ({
  id: AccountId.make(r.id),
  email: r.email,
  company: r.company,
  numbers_limit: r.numbers_limit,
  created_at: iso(r.created_at)
})

const toNumber = (r: typeof NumberColumns.Type): NumberRow => ({
  id: NumberId.make(r.id),
  account_id: AccountId.make(r.account_id),
  phone: r.phone,
  status: r.status,
  paused: r.paused,
  pause_reason: Drawdown.pauseReason(r.paused, r.pause_reason),
  connected_at: isoOrNull(r.connected_at),
  created_at: iso(r.created_at),
  restricted_until: isoOrNull(r.restricted_until),
  restriction_reason: r.restriction_reason,
  status_reason: r.status_reason
})

/** PostgreSQL refused a duplicate (SQLSTATE 23505). */
const isUniqueViolation = (e: unknown) =>
  Predicate.hasProperty(e, "cause") && Predicate.hasProperty(e.cause, "code") && e.cause.code === "23505"

/** @since 1.0.0 */
export class Accounts extends Effect.Service<Accounts>()("@wagate/store/Accounts", {
  accessors: true,
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const accountColumns = sql.literal(ACCOUNT_COLUMNS)
    const numberColumns = sql.literal(NUMBER_COLUMNS)

    const insertAccount = SqlSchema.single({
      Request: Schema.Struct({ email: Schema.String, company: Schema.String }),
      Result: AccountColumns,
      execute: ({ company, email }) =>
        sql`INSERT INTO accounts (email, company) VALUES (${email}, ${company}) RETURNING ${accountColumns}`
    })

    const create = Effect.fn("Accounts.create")(function*(input: { readonly email: string; readonly company: string }) {
      const row = yield* insertAccount(input).pipe(
        Effect.catchIf(isUniqueViolation, () => new EmailTaken({ email: input.email })),
        Effect.catchTags({ SqlError: Effect.die, ParseError: Effect.die, NoSuchElementException: Effect.die })
      )
      return toAccount(row)
    })

    const findAccount = SqlSchema.findOne({
      Request: Schema.Number,
      Result: AccountColumns,
      execute: (id) => sql`SELECT ${accountColumns} FROM accounts WHERE id = ${id}`
    })

    const find = Effect.fn("Accounts.find")(function*(id: AccountId) {
      return Option.map(yield* findAccount(id), toAccount)
    }, Effect.orDie)

    const liveNumbers = SqlSchema.findAll({
      Request: Schema.Struct({ accountId: Schema.Number, numberId: Schema.NullOr(Schema.Number) }),
      Result: NumberColumns,
      execute: ({ accountId, numberId }) =>
        sql`
          SELECT ${numberColumns} FROM numbers
          WHERE account_id = ${accountId} AND deleted_at IS NULL
            ${numberId === null ? sql`` : sql`AND id = ${numberId}`}
          ORDER BY id`
    })

    /** Live numbers of the account (or just one of them), oldest first. */
    const numbers = Effect.fn("Accounts.numbers")(function*(accountId: AccountId, numberId: NumberId | null = null) {
      const rows = yield* liveNumbers({ accountId, numberId })
      return rows.map(toNumber)
    }, Effect.orDie)

    /**
     * Finds a live number of the account by id or phone, as `from` names it. A number key
     * (`only`) finds nothing but its own number.
     */
    const liveNumber = SqlSchema.findOne({
      Request: Schema.Struct({
        accountId: Schema.Number,
        ref: Schema.Union(Schema.Struct({ id: Schema.Number }), Schema.Struct({ phone: Schema.String })),
        only: Schema.NullOr(Schema.Number)
      }),
      Result: NumberColumns,
      execute: ({ accountId, only, ref }) =>
        sql`
          SELECT ${numberColumns} FROM numbers
          WHERE account_id = ${accountId} AND deleted_at IS NULL
            AND ${"id" in ref ? sql`id = ${ref.id}` : sql`phone = ${ref.phone}`}
            ${only === null ? sql`` : sql`AND id = ${only}`}`
    })

    const findNumber = Effect.fn("Accounts.findNumber")(
      function*(accountId: AccountId, ref: { readonly id: number } | { readonly phone: string }, only: NumberId | null) {
        return Option.map(yield* liveNumber({ accountId, ref, only }), toNumber)
      },
      Effect.orDie
    )

    const lockForNumber = SqlSchema.findOne({
      Request: Schema.Number,
      Result: Schema.Struct({ numbers_limit: Schema.Number, count: Int8 }),
      execute: (accountId) =>
        sql`
          SELECT a.numbers_limit,
                 (SELECT count(*) FROM numbers n WHERE n.account_id = a.id AND n.deleted_at IS NULL) AS count
          FROM accounts a WHERE a.id = ${accountId} FOR NO KEY UPDATE`
    })

    const insertNumber = SqlSchema.single({
      Request: Schema.Struct({ accountId: Schema.Number, phone: Schema.String }),
      Result: NumberColumns,
      execute: ({ accountId, phone }) =>
        sql`INSERT INTO numbers (account_id, phone) VALUES (${accountId}, ${phone}) RETURNING ${numberColumns}`
    })

    /** Records a number for the account; its connection starts as `none`. */
    const addNumber = Effect.fn("Accounts.addNumber")(function*(accountId: AccountId, phone: string) {
      return yield* Effect.gen(function*() {
        const found = yield* lockForNumber(accountId)
        if (Option.isNone(found)) return yield* new AccountNotFound({ id: accountId })
        const account = found.value
        if (account.count >= account.numbers_limit) {
          return yield* new NumbersLimitReached({ limit: account.numbers_limit })
        }
        const row = yield* insertNumber({ accountId, phone }).pipe(
          Effect.catchIf(isUniqueViolation, () => new PhoneTaken({ phone }))
        )
        return toNumber(row)
      }).pipe(
        sql.withTransaction,
        Effect.catchTags({ SqlError: Effect.die, ParseError: Effect.die, NoSuchElementException: Effect.die })
      )
    })

    const fundsRow = SqlSchema.single({
      Request: Schema.Number,
      Result: Schema.Struct({ balance: Int8, stored: Int8, paused: Int8, waiting: Int8 }),
      execute: (accountId) =>
        sql`
          SELECT
            coalesce((SELECT balance FROM account_balances WHERE account_id = ${accountId}), 0) AS balance,
            (SELECT coalesce(sum(bytes), 0) FROM media_usage WHERE account_id = ${accountId}) AS stored,
            (SELECT count(*) FROM numbers WHERE account_id = ${accountId} AND deleted_at IS NULL AND paused) AS paused,
            (SELECT count(*) FROM numbers WHERE account_id = ${accountId} AND deleted_at IS NULL AND paused
               AND pause_reason = 'balance') AS waiting`
    })

    const activeNumbers = SqlSchema.findAll({
      Request: Schema.Number,
      Result: Schema.Struct({ id: Int8 }),
      execute: (accountId) =>
        sql`SELECT id FROM numbers WHERE account_id = ${accountId} AND deleted_at IS NULL AND NOT paused ORDER BY id`
    })

    /** Balance, daily charge and paid periods of the account and its numbers as of `now` (epoch ms). */
    const funds = Effect.fn("Accounts.funds")(function*(accountId: AccountId, now: number) {
      const [row, active] = yield* Effect.all([fundsRow(accountId), activeNumbers(accountId)])
      const { numbersPaidUntil, paidUntil, toResumeTiyn, ...balance } = Pricing.balanceOf({
        balanceTiyn: row.balance,
        // Counted with the ids: the numbers each get a paid period.
        activeNumbers: active.length,
        pausedNumbers: row.paused,
        balancePausedNumbers: row.waiting,
        now,
        storageDailyTiyn: StoragePricing.chargeFor(row.stored).dailyTiyn
      })
      return {
        ...balance,
        paidUntil: paidUntil === null ? null : new Date(paidUntil).toISOString(),
        numbersPaidUntil: new Map(active.map(({ id }, i) => [id, new Date(numbersPaidUntil[i]!).toISOString()])),
        toResume: Pricing.tiynToKzt(toResumeTiyn)
      } satisfies Funds
    }, Effect.orDie)

    /**
     * Locks the account's row until the transaction ends (false: no such account): the lock every
     * change of the account's money takes first (Billing). NO KEY UPDATE leaves rows that
     * reference the account (messages, files, ledger rows) free to be written meanwhile.
     */
    const lockRow = (accountId: number) =>
      Effect.map(sql`SELECT id FROM accounts WHERE id = ${accountId} FOR NO KEY UPDATE`, (rows) => rows.length > 0)

    /**
     * Runs `body` in one transaction holding the account's row: what it reads of the account's
     * balance and usage holds until it commits, and bodies of one account run one after the other.
     */
    const locked = <A, R>(accountId: AccountId, body: Effect.Effect<A, never, R>) =>
      Effect.zipRight(lockRow(accountId), body).pipe(sql.withTransaction, Effect.orDie)

    return { create, find, numbers, findNumber, addNumber, funds, lockRow, locked } as const
  })
}) {}

/**
 * A number as the API shows it. A paused number has no paid period; each of the others has its
 * own: on the last day the balance reaches, it pays for the oldest numbers only, so they are paid
 * a day longer than the newer ones (and than the account's `paid_until`).
 *
 * @since 1.0.0
 */
export const toLinkedNumber = (n: NumberRow, funds: Funds): LinkedNumber => ({
  id: n.id,
  phone: n.phone,
  status: n.status,
  paused: n.paused,
  pause_reason: n.pause_reason,
  paid_until: n.paused ? null : funds.numbersPaidUntil.get(n.id) ?? funds.paidUntil,
  created_at: n.created_at
})
