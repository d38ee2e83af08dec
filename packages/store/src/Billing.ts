/**
 * The money ledger and the daily drawdown, in PostgreSQL. Every change of money or of a
 * number's pause runs in one transaction that first locks the account's row, so top-ups,
 * charges, new numbers and drawdowns of one account never interleave, whichever process runs
 * them. A day is settled once per account (`billing_days`), each number is charged once per day
 * (a unique index on the ledger), and the balance is the sum of the ledger, kept as a running total
 * (`account_balances`, moved by triggers on the ledger: migration 0028).
 *
 * @since 1.0.0
 */
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Almaty from "@wagate/domain/Almaty"
import * as Drawdown from "@wagate/domain/Drawdown"
import type { AccountId, NumberId } from "@wagate/domain/Ids"
import * as Pricing from "@wagate/domain/Pricing"
import * as StoragePricing from "@wagate/domain/StoragePricing"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { Accounts } from "./Accounts.js"
import { Instant, Int8, NullOrInt8, NullOrString } from "./Columns.js"
import * as Outbox from "./Outbox.js"

const LedgerKind = Schema.Literal("top_up", "payment", "refund", "number_day", "storage_day")
/** Ledger kinds: the reason of each row. @since 1.0.0 */
export type LedgerKind = typeof LedgerKind.Type

/** @since 1.0.0 */
export interface LedgerRow {
  readonly id: number
  readonly kind: LedgerKind
  /** Tiyn: credits positive, charges and refunds negative. */
  readonly amount: number
  readonly number_id: number | null
  readonly day: string | null
  readonly note: string | null
  readonly reference: string | null
  readonly created_at: string
}

/** A number whose pause (or the reason for it) changed: its entity must pick the change up. @since 1.0.0 */
export interface PauseChange {
  readonly numberId: number
  readonly paused: boolean
}

/** What a settlement did. @since 1.0.0 */
export interface Settled {
  readonly days: ReadonlyArray<string>
  /** Tiyn charged. */
  readonly charged: number
  readonly charges: number
  readonly changes: ReadonlyArray<PauseChange>
}

const LedgerEntry = Schema.Struct({
  id: Int8,
  kind: LedgerKind,
  amount: Int8,
  number_id: NullOrInt8,
  day: NullOrString,
  note: NullOrString,
  reference: NullOrString,
  created_at: Instant
})

const BillableRow = Schema.Struct({
  id: Int8,
  phone: Schema.String,
  status: Schema.String,
  paused: Schema.Boolean,
  pause_reason: NullOrString
})
type BillableRow = typeof BillableRow.Type

/** One row of one column, a sum or count that PostgreSQL returns as text or bigint. */
const Total = Schema.Struct({ n: Int8 })

const nothing: Settled = { days: [], charged: 0, charges: 0, changes: [] }

/** @since 1.0.0 */
export class InsufficientBalance extends Data.TaggedError("InsufficientBalance")<{
  readonly balance: number
  readonly needed: number
}> {}
/** A credit that would take the balance past `Pricing.MAX_BALANCE_TIYN`; nothing was credited. @since 1.0.0 */
export class BalanceLimit extends Data.TaggedError("BalanceLimit")<{
  readonly balance: number
  readonly amount: number
}> {}
/** @since 1.0.0 */
export class NumberMissing extends Data.TaggedError("NumberMissing")<{ readonly id: number }> {}

/** @since 1.0.0 */
export class Billing extends Effect.Service<Billing>()("@wagate/store/Billing", {
  effect: Effect.gen(function*() {
    const sql = yield* PgClient.PgClient
    const accounts = yield* Accounts

    const storedBytes = SqlSchema.single({
      Request: Schema.Number,
      Result: Total,
      execute: (accountId) => sql`SELECT coalesce(sum(bytes), 0)::text AS n FROM media_usage WHERE account_id = ${accountId}`
    })
    /** The account's storage packs for a day, from what it keeps now (as GET /storage shows it). */
    const storageCharge = (accountId: number) =>
      Effect.map(storedBytes(accountId), ({ n }) => StoragePricing.chargeFor(n).dailyTiyn)

    /**
     * Locks the account's row, then its numbers' rows in id order, before anything else: the
     * number entities lock a number's row before the webhook endpoint's (status events), so
     * taking them in the same order never deadlocks. NO KEY UPDATE leaves rows that reference
     * the account (messages, files) free to be written meanwhile.
     */
    const lock = (accountId: number) =>
      Effect.gen(function*() {
        if (!(yield* accounts.lockRow(accountId))) return false
        yield* sql`SELECT id FROM numbers WHERE account_id = ${accountId} ORDER BY id FOR NO KEY UPDATE`
        return true
      })

    const readBalance = SqlSchema.single({
      Request: Schema.Number,
      Result: Total,
      execute: (accountId) =>
        sql`SELECT coalesce((SELECT balance FROM account_balances WHERE account_id = ${accountId}), 0)::text AS n`
    })
    const balanceOf = (accountId: number) => Effect.map(readBalance(accountId), ({ n }) => n)

    const lastSettled = SqlSchema.single({
      Request: Schema.Number,
      Result: Schema.Struct({ day: NullOrString }),
      execute: (accountId) => sql`SELECT max(day)::text AS day FROM billing_days WHERE account_id = ${accountId}`
    })

    const billableNumbers = SqlSchema.findAll({
      Request: Schema.Number,
      Result: BillableRow,
      execute: (accountId) =>
        sql`
          SELECT id, phone, status, paused, pause_reason FROM numbers
          WHERE account_id = ${accountId} AND deleted_at IS NULL ORDER BY id`
    })

    const chargesOfDay = SqlSchema.findAll({
      Request: Schema.Struct({ accountId: Schema.Number, day: Schema.String }),
      Result: Schema.Struct({ number_id: NullOrInt8, kind: LedgerKind }),
      execute: ({ accountId, day }) =>
        sql`
          SELECT number_id, kind FROM ledger
          WHERE account_id = ${accountId} AND day = ${day} AND kind IN ('number_day', 'storage_day')`
    })

    /**
     * Settles the account's days up to `through` (the account's row locked by the caller): every
     * day after the last settled one, each once; `through` again when it is today (a top-up, a
     * new number or a resume may change what today allows). A clock that went back never
     * settles a day before the last one: "today" is then the last settled day. Pause changes
     * are written with their session.status events.
     */
    const settleLocked = (accountId: number, through: string, at: number) =>
      Effect.gen(function*() {
        const last = yield* lastSettled(accountId)
        const today = Almaty.dateOf(at)
        const days = last.day === null
          ? [through]
          : through > last.day
          ? Drawdown.daysBetween(last.day, through)
          : through === today
          ? [last.day]
          : []
        if (days.length === 0) return nothing
        let balance = yield* balanceOf(accountId)
        const rows = yield* billableNumbers(accountId)
        const pausedBy = (r: BillableRow) => Drawdown.pauseReason(r.paused, r.pause_reason)
        let numbers: ReadonlyArray<Drawdown.BillableNumber> = rows.map((r) => ({
          id: r.id,
          pausedBy: pausedBy(r),
          charged: false
        }))
        let charged = 0
        let charges = 0
        for (const day of days) {
          const done = yield* chargesOfDay({ accountId, day })
          const paid = new Set(done.flatMap((r) => (r.kind === "number_day" && r.number_id !== null ? [r.number_id] : [])))
          const storage = done.some((r) => r.kind === "storage_day") ? 0 : yield* storageCharge(accountId)
          const plan = Drawdown.planDay({
            balance,
            storage,
            numbers: numbers.map((n) => ({ ...n, charged: paid.has(n.id) }))
          })
          if (plan.storage > 0) {
            yield* sql`
              INSERT INTO ledger (account_id, amount, kind, day, note)
              VALUES (${accountId}, ${-plan.storage}, 'storage_day', ${day}, ${`storage packs, ${day}`})
              ON CONFLICT DO NOTHING`
          }
          for (const id of plan.charge) {
            const phone = rows.find((r) => r.id === id)!.phone
            yield* sql`
              INSERT INTO ledger (account_id, amount, kind, number_id, day, note)
              VALUES (${accountId}, ${-Pricing.NUMBER_DAILY_TIYN}, 'number_day', ${id}, ${day}, ${`number ${phone}, ${day}`})
              ON CONFLICT DO NOTHING`
          }
          const dayCharged = plan.storage + plan.charge.length * Pricing.NUMBER_DAILY_TIYN
          yield* sql`
            INSERT INTO billing_days (account_id, day, charged) VALUES (${accountId}, ${day}, ${dayCharged})
            ON CONFLICT (account_id, day) DO UPDATE SET charged = billing_days.charged + EXCLUDED.charged`
          charged += dayCharged
          charges += plan.charge.length + (plan.storage > 0 ? 1 : 0)
          balance = plan.balance
          numbers = plan.numbers
        }
        const changes: Array<PauseChange> = []
        for (const r of rows) {
          const next = numbers.find((n) => n.id === r.id)!.pausedBy
          if (next === pausedBy(r)) continue
          yield* writePause(accountId, r, next, at)
          if ((next !== null) !== r.paused) changes.push({ numberId: r.id, paused: next !== null })
        }
        return { days, charged, charges, changes } satisfies Settled
      })

    const writePause = (
      accountId: number,
      r: BillableRow,
      next: Drawdown.PauseReason | null,
      at: number
    ) =>
      Effect.gen(function*() {
        yield* sql`UPDATE numbers SET paused = ${next !== null}, pause_reason = ${next} WHERE id = ${r.id}`
        if ((next !== null) === r.paused) return
        yield* Outbox.enqueue(
          sql,
          accountId,
          Outbox.envelope("session.status", at, {
            status: next === null ? "resumed" : "paused",
            connection_status: r.status,
            number_id: r.id,
            phone: r.phone,
            paused: next !== null,
            reason: next === null
              ? "resumed"
              : next === "balance"
              ? "the balance does not cover the day"
              : "paused by the operator"
          })
        )
      })

    const inAccount = <A, E, R>(accountId: number, body: Effect.Effect<A, E, R>) =>
      Effect.gen(function*() {
        if (!(yield* lock(accountId))) return yield* Effect.dieMessage(`no account ${accountId}`)
        return yield* body
      }).pipe(sql.withTransaction)

    /** Settles one account up to `through` (see settleLocked). */
    const settle = Effect.fn("Billing.settle")(function*(accountId: AccountId, through: string, at: number) {
      return yield* inAccount(accountId, settleLocked(accountId, through, at))
    }, Effect.orDie)

    const unsettled = SqlSchema.findAll({
      Request: Schema.String,
      Result: Schema.Struct({ id: Int8 }),
      execute: (through) =>
        sql`
          SELECT a.id FROM accounts a
          WHERE NOT EXISTS (SELECT 1 FROM billing_days b WHERE b.account_id = a.id AND b.day >= ${through})
          ORDER BY a.id`
    })

    /**
     * The drawdown of every account not yet settled up to `through`, one account per
     * transaction: a stop halfway leaves the accounts done settled and the others for the next
     * run, and a second run charges nothing.
     */
    const drawdown = Effect.fn("Billing.drawdown")(function*(through: string, at: number) {
      const due = yield* unsettled(through)
      const results: Array<Settled & { readonly accountId: number }> = []
      for (const { id } of due) {
        const settled = yield* inAccount(id, settleLocked(id, through, at))
        results.push({ ...settled, accountId: id })
      }
      return results
    }, Effect.orDie)

    /**
     * Adds a number when the balance covers its first day, and charges that day (the whole day,
     * whatever the hour), in one transaction.
     */
    const addNumber = Effect.fn("Billing.addNumber")(function*(accountId: AccountId, phone: string, at: number) {
      return yield* Effect.gen(function*() {
        const today = Almaty.dateOf(at)
        yield* settleLocked(accountId, today, at)
        const balance = yield* balanceOf(accountId)
        if (balance < Pricing.NUMBER_DAILY_TIYN) {
          return yield* new InsufficientBalance({ balance, needed: Pricing.NUMBER_DAILY_TIYN })
        }
        const number = yield* accounts.addNumber(accountId, phone)
        const settled = yield* settleLocked(accountId, today, at)
        return { number, settled }
      }).pipe(
        (body) =>
          Effect.gen(function*() {
            if (!(yield* lock(accountId))) return yield* Effect.dieMessage(`no account ${accountId}`)
            return yield* body
          }),
        sql.withTransaction,
        Effect.catchTags({ SqlError: Effect.die, ParseError: Effect.die, NoSuchElementException: Effect.die })
      )
    })

    /**
     * Credits the account and settles today at once, so numbers paused for the balance resume
     * as soon as the money covers them. With a `reference` (a payment id) the credit is made
     * once: a repeat credits nothing and answers `credited: false`. A credit that would take the
     * balance past the maximum credits nothing (`BalanceLimit`), unless `upToMaximum` (money a
     * payment provider has already taken): then the credit is what fits, the ledger row's note
     * says what did not, and `notCreditedTiyn` answers it (0 when all fits).
     */
    const credit = Effect.fn("Billing.credit")(function*(
      accountId: AccountId,
      tiyn: number,
      entry: {
        readonly kind: "top_up" | "payment"
        readonly note: string | null
        readonly reference?: string
        readonly upToMaximum?: boolean
      },
      at: number
    ) {
      return yield* inAccount(
        accountId,
        Effect.gen(function*() {
          const balance = yield* balanceOf(accountId)
          const over = entry.upToMaximum === true ? Math.min(tiyn, Math.max(0, balance + tiyn - Pricing.MAX_BALANCE_TIYN)) : 0
          const note = over === 0 ? entry.note : [entry.note, Pricing.notCredited(over, tiyn)].filter((n) => n !== null).join("; ")
          const inserted = yield* sql`
            INSERT INTO ledger (account_id, amount, kind, note, reference)
            VALUES (${accountId}, ${tiyn - over}, ${entry.kind}, ${note}, ${entry.reference ?? null})
            ON CONFLICT DO NOTHING RETURNING id`
          if (inserted.length === 0) return { credited: false, notCreditedTiyn: 0, settled: nothing }
          // After the insert, so a repeated payment still answers `credited: false`; failing
          // rolls the insert back.
          if (balance + tiyn - over > Pricing.MAX_BALANCE_TIYN) return yield* new BalanceLimit({ balance, amount: tiyn })
          return { credited: true, notCreditedTiyn: over, settled: yield* settleLocked(accountId, Almaty.dateOf(at), at) }
        })
      ).pipe(Effect.catchTags({ SqlError: Effect.die, ParseError: Effect.die, NoSuchElementException: Effect.die }))
    })

    /** Pays money back out of the balance; never more than the balance holds. */
    const refund = Effect.fn("Billing.refund")(function*(accountId: AccountId, tiyn: number, note: string | null, at: number) {
      return yield* Effect.gen(function*() {
        if (!(yield* lock(accountId))) return yield* Effect.dieMessage(`no account ${accountId}`)
        const balance = yield* balanceOf(accountId)
        if (balance < tiyn) return yield* new InsufficientBalance({ balance, needed: tiyn })
        yield* sql`
          INSERT INTO ledger (account_id, amount, kind, note) VALUES (${accountId}, ${-tiyn}, 'refund', ${note})`
        return yield* settleLocked(accountId, Almaty.dateOf(at), at)
      }).pipe(sql.withTransaction, Effect.catchTags({ SqlError: Effect.die, ParseError: Effect.die, NoSuchElementException: Effect.die }))
    })

    const ownerOf = SqlSchema.findOne({
      Request: Schema.Number,
      Result: Schema.Struct({ account_id: Int8 }),
      execute: (numberId) => sql`SELECT account_id FROM numbers WHERE id = ${numberId} AND deleted_at IS NULL`
    })

    const billableNumber = SqlSchema.single({
      Request: Schema.Number,
      Result: BillableRow,
      execute: (numberId) => sql`SELECT id, phone, status, paused, pause_reason FROM numbers WHERE id = ${numberId}`
    })

    /**
     * The operator's pause or resume of a number. A resumed number is then charged for today if
     * it was not (or paused for the balance when the money does not cover it).
     */
    const operatorPause = Effect.fn("Billing.operatorPause")(function*(numberId: NumberId, paused: boolean, at: number) {
      return yield* Effect.gen(function*() {
        const owner = yield* ownerOf(numberId)
        if (Option.isNone(owner)) return yield* new NumberMissing({ id: numberId })
        const accountId = owner.value.account_id
        yield* lock(accountId)
        const n = yield* billableNumber(numberId)
        const changes: Array<PauseChange> = []
        if (paused && n.pause_reason !== "operator") {
          yield* writePause(accountId, n, "operator", at)
          // Also when it was paused for the balance: the entity says why it refuses.
          changes.push({ numberId, paused: true })
        } else if (!paused && n.pause_reason === "operator") {
          yield* writePause(accountId, n, null, at)
          changes.push({ numberId, paused: false })
        }
        const settled = yield* settleLocked(accountId, Almaty.dateOf(at), at)
        const merged = new Map(changes.map((c) => [c.numberId, c.paused]))
        for (const c of settled.changes) merged.set(c.numberId, c.paused)
        return {
          accountId,
          settled: { ...settled, changes: [...merged].map(([id, p]) => ({ numberId: id, paused: p })) }
        }
      }).pipe(sql.withTransaction, Effect.catchTags({ SqlError: Effect.die, ParseError: Effect.die, NoSuchElementException: Effect.die }))
    })

    const ledgerPage = SqlSchema.findAll({
      Request: Schema.Struct({ accountId: Schema.Number, limit: Schema.Number, before: Schema.NullOr(Schema.Number) }),
      Result: LedgerEntry,
      execute: ({ accountId, before, limit }) =>
        sql`
          SELECT id, kind, amount, number_id, day::text AS day, note, reference, created_at FROM ledger
          WHERE account_id = ${accountId} ${before === null ? sql`` : sql`AND id < ${before}`}
          ORDER BY id DESC LIMIT ${limit}`
    })

    /** The account's ledger, newest first, in pages of `limit` before the row id `before`. */
    const ledger = Effect.fn("Billing.ledger")(function*(
      accountId: AccountId,
      page: { readonly limit: number; readonly before: number | null }
    ) {
      const rows = yield* ledgerPage({ accountId, ...page })
      return rows.map((r): LedgerRow => ({
        id: r.id,
        kind: r.kind,
        amount: r.amount,
        number_id: r.number_id,
        day: r.day,
        note: r.note,
        reference: r.reference,
        created_at: r.created_at.toISOString()
      }))
    }, Effect.orDie)

    const balance = Effect.fn("Billing.balance")((accountId: AccountId) => balanceOf(accountId), Effect.orDie)

    return { settle, drawdown, addNumber, credit, refund, operatorPause, ledger, balance } as const
  })
}) {}
