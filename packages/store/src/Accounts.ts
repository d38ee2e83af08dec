/**
 * Accounts, their numbers and their money: the rows behind GET /numbers, /status, /balance, /me
 * and the operator's provisioning.
 *
 * @since 1.0.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { Balance } from "@wagate/domain/Account"
import type { ConnectionStatus } from "@wagate/domain/Connection"
import { AccountId, NumberId } from "@wagate/domain/Ids"
import type { LinkedNumber } from "@wagate/domain/LinkedNumber"
import * as Pricing from "@wagate/domain/Pricing"
import * as StoragePricing from "@wagate/domain/StoragePricing"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import { int, iso, isoOrNull } from "./Time.js"

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
  readonly paidUntil: string | null
}

const toAccount = (r: any): AccountRow => ({
  id: AccountId.make(int(r.id)),
  email: r.email,
  company: r.company,
  numbers_limit: r.numbers_limit,
  created_at: iso(r.created_at)
})

const toNumber = (r: any): NumberRow => ({
  id: NumberId.make(int(r.id)),
  account_id: AccountId.make(int(r.account_id)),
  phone: r.phone,
  status: r.status,
  paused: r.paused,
  connected_at: isoOrNull(r.connected_at),
  created_at: iso(r.created_at),
  restricted_until: isoOrNull(r.restricted_until),
  restriction_reason: r.restriction_reason ?? null,
  status_reason: r.status_reason ?? null
})

/** PostgreSQL refused a duplicate (SQLSTATE 23505). */
const isUniqueViolation = (e: unknown) =>
  Predicate.hasProperty(e, "cause") && Predicate.hasProperty(e.cause, "code") && e.cause.code === "23505"

/** @since 1.0.0 */
export class Accounts extends Effect.Service<Accounts>()("@wagate/store/Accounts", {
  accessors: true,
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const create = Effect.fn("Accounts.create")(function*(input: { readonly email: string; readonly company: string }) {
      const rows = yield* sql`
        INSERT INTO accounts (email, company) VALUES (${input.email}, ${input.company}) RETURNING *`.pipe(
        Effect.catchIf(isUniqueViolation, () => new EmailTaken({ email: input.email })),
        Effect.catchTag("SqlError", Effect.die)
      )
      return toAccount(rows[0])
    })

    const find = Effect.fn("Accounts.find")(function*(id: AccountId) {
      const [row] = yield* sql`SELECT * FROM accounts WHERE id = ${id}`
      return Option.map(Option.fromNullable(row), toAccount)
    }, Effect.orDie)

    /** Live numbers of the account (or just one of them), oldest first. */
    const numbers = Effect.fn("Accounts.numbers")(function*(accountId: AccountId, numberId: NumberId | null = null) {
      const rows = yield* sql`
        SELECT * FROM numbers
        WHERE account_id = ${accountId} AND deleted_at IS NULL
          ${numberId === null ? sql`` : sql`AND id = ${numberId}`}
        ORDER BY id`
      return rows.map(toNumber)
    }, Effect.orDie)

    /**
     * Finds a live number of the account by id or phone, as `from` names it. A number key
     * (`only`) finds nothing but its own number.
     */
    const findNumber = Effect.fn("Accounts.findNumber")(
      function*(accountId: AccountId, ref: { readonly id: number } | { readonly phone: string }, only: NumberId | null) {
        const [row] = yield* sql`
          SELECT * FROM numbers
          WHERE account_id = ${accountId} AND deleted_at IS NULL
            AND ${"id" in ref ? sql`id = ${ref.id}` : sql`phone = ${ref.phone}`}
            ${only === null ? sql`` : sql`AND id = ${only}`}`
        return Option.map(Option.fromNullable(row), toNumber)
      },
      Effect.orDie
    )

    /** Records a number for the account; its connection starts as `none`. */
    const addNumber = Effect.fn("Accounts.addNumber")(function*(accountId: AccountId, phone: string) {
      return yield* Effect.gen(function*() {
        const [account] = yield* sql<{ numbers_limit: number; count: string }>`
          SELECT a.numbers_limit,
                 (SELECT count(*) FROM numbers n WHERE n.account_id = a.id AND n.deleted_at IS NULL) AS count
          FROM accounts a WHERE a.id = ${accountId} FOR NO KEY UPDATE`
        if (!account) return yield* new AccountNotFound({ id: accountId })
        if (int(account.count) >= account.numbers_limit) {
          return yield* new NumbersLimitReached({ limit: account.numbers_limit })
        }
        const rows = yield* sql`
          INSERT INTO numbers (account_id, phone) VALUES (${accountId}, ${phone}) RETURNING *`.pipe(
          Effect.catchIf(isUniqueViolation, () => new PhoneTaken({ phone }))
        )
        return toNumber(rows[0])
      }).pipe(sql.withTransaction, Effect.catchTag("SqlError", Effect.die))
    })

    const setNumberStatus = Effect.fn("Accounts.setNumberStatus")(function*(id: NumberId, status: ConnectionStatus) {
      yield* sql`
        UPDATE numbers SET status = ${status},
          connected_at = CASE WHEN ${status} = 'WORKING' THEN coalesce(connected_at, now()) ELSE connected_at END
        WHERE id = ${id}`
    }, Effect.orDie)

    /** Adds a top-up to the ledger. */
    const credit = Effect.fn("Accounts.credit")(function*(accountId: AccountId, kzt: number, note: string | null) {
      yield* sql`
        INSERT INTO ledger (account_id, amount, kind, note)
        VALUES (${accountId}, ${Pricing.kztToTiyn(kzt)}, 'top_up', ${note})`
    }, Effect.orDie)

    /** Balance, daily charge and paid period of the account as of `now` (epoch ms). */
    const funds = Effect.fn("Accounts.funds")(function*(accountId: AccountId, now: number) {
      const [row] = yield* sql<{ balance: string; active: string; paused: string; stored: string }>`
        SELECT
          (SELECT coalesce(sum(amount), 0) FROM ledger WHERE account_id = ${accountId}) AS balance,
          (SELECT coalesce(sum(bytes), 0) FROM media_usage WHERE account_id = ${accountId}) AS stored,
          (SELECT count(*) FROM numbers WHERE account_id = ${accountId} AND deleted_at IS NULL AND NOT paused) AS active,
          (SELECT count(*) FROM numbers WHERE account_id = ${accountId} AND deleted_at IS NULL AND paused) AS paused`
      const { paidUntil, ...balance } = Pricing.balanceOf({
        balanceTiyn: int(row.balance),
        activeNumbers: int(row.active),
        pausedNumbers: int(row.paused),
        now,
        storageDailyTiyn: StoragePricing.chargeFor(int(row.stored)).dailyTiyn
      })
      return { ...balance, paidUntil: paidUntil === null ? null : new Date(paidUntil).toISOString() } satisfies Funds
    }, Effect.orDie)

    return { create, find, numbers, findNumber, addNumber, setNumberStatus, credit, funds } as const
  })
}) {}

/**
 * A number as the API shows it. A paused number has no paid period; the others share the
 * account's.
 *
 * @since 1.0.0
 */
export const toLinkedNumber = (n: NumberRow, funds: Funds): LinkedNumber => ({
  id: n.id,
  phone: n.phone,
  status: n.status,
  paused: n.paused,
  paid_until: n.paused ? null : funds.paidUntil,
  created_at: n.created_at
})
