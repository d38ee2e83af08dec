/**
 * An account's balance is the sum of its ledger, kept as a running total beside the account
 * (migration 0028) instead of summed over the whole ledger at every read: whatever writes,
 * changes or removes ledger rows moves it in the same transaction, a rolled-back write moves
 * nothing, and an upgrade fills it from the ledger there was (docs/performance.md, "The balance of
 * an account with a long ledger").
 */
import { assert, layer } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import { AccountId } from "@wagate/domain/Ids"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Accounts } from "../src/Accounts.js"
import { Billing } from "../src/Billing.js"
import * as Database from "../src/Database.js"
import accountBalance from "../src/migrations/0028_account_balance.js"

const Env = Billing.Default.pipe(Layer.provideMerge(Accounts.Default), Layer.provideMerge(Database.layerTest))
const NOON = Date.parse("2026-11-20T07:00:00Z")

/** Each account's balance as the gateway reads it, beside the sum of its ledger rows. */
const balances = (accountIds: ReadonlyArray<number>) =>
  Effect.gen(function*() {
    const billing = yield* Billing
    const sql = yield* SqlClient.SqlClient
    return yield* Effect.forEach(accountIds, (id) =>
      Effect.gen(function*() {
        const [row] = yield* sql<{ sum: string }>`SELECT coalesce(sum(amount), 0)::text AS sum FROM ledger WHERE account_id = ${id}`
        return { read: yield* billing.balance(AccountId.make(id)), ledger: Number(row!.sum) }
      }))
  })

layer(Env, { excludeTestServices: true, timeout: 60_000 })("an account's balance", (it) => {
  it.effect("follows every row written, changed or removed in the ledger, by any statement; a rolled-back one moves nothing", () =>
    Effect.gen(function*() {
      const accounts = yield* Accounts
      const billing = yield* Billing
      const sql = yield* SqlClient.SqlClient
      const a = yield* accounts.create({ email: "balance-a@example.kz", company: "A" })
      const b = yield* accounts.create({ email: "balance-b@example.kz", company: "B" })
      const c = yield* accounts.create({ email: "balance-c@example.kz", company: "C" })
      assert.deepStrictEqual(yield* balances([c.id]), [{ read: 0, ledger: 0 }])

      // Payments and top-ups of two accounts at once, and a refund.
      yield* Effect.all(
        Array.from({ length: 20 }, (_, i) =>
          billing.credit(i % 2 === 0 ? a.id : b.id, 1_000 + i, { kind: "top_up", note: null }, NOON)),
        { concurrency: 10 }
      )
      yield* billing.refund(a.id, 2_500, "asked back", NOON)
      // One statement writing rows of several accounts, as an operator's fix by hand would.
      yield* sql`INSERT INTO ledger (account_id, amount, kind, note) VALUES
        (${a.id}, 700, 'top_up', 'by hand'), (${b.id}, -300, 'refund', 'by hand'), (${c.id}, 50, 'top_up', 'by hand')`
      let now = yield* balances([a.id, b.id, c.id])
      assert.deepStrictEqual(now.map((x) => x.read), [10_090 - 2_500 + 700, 10_100 - 300, 50])
      assert.deepStrictEqual(now.map((x) => x.read), now.map((x) => x.ledger))

      // A row changed (moved to another account and its amount), and rows removed.
      yield* sql`UPDATE ledger SET amount = 900, account_id = ${c.id} WHERE account_id = ${a.id} AND note = 'by hand'`
      yield* sql`DELETE FROM ledger WHERE account_id = ${b.id} AND note = 'by hand'`
      now = yield* balances([a.id, b.id, c.id])
      assert.deepStrictEqual(now.map((x) => x.read), [10_090 - 2_500, 10_100, 950])
      assert.deepStrictEqual(now.map((x) => x.read), now.map((x) => x.ledger))

      // A credit past the most a balance may hold is written, then rolled back with its total.
      const refused = yield* Effect.either(billing.credit(c.id, 100_000_000_000, { kind: "top_up", note: null }, NOON))
      assert.isTrue(refused._tag === "Left" && refused.left._tag === "BalanceLimit", JSON.stringify(refused))
      assert.deepStrictEqual(yield* balances([c.id]), [{ read: 950, ledger: 950 }])
    }))

  it.effect("an upgrade fills it from the ledger written before, and follows the rows written after", () =>
    Effect.gen(function*() {
      const accounts = yield* Accounts
      const billing = yield* Billing
      const sql = yield* SqlClient.SqlClient
      const a = yield* accounts.create({ email: "upgrade-a@example.kz", company: "A" })
      const b = yield* accounts.create({ email: "upgrade-b@example.kz", company: "B" })
      // The database as a release before 0028 left it: no running totals, a ledger of rows.
      yield* sql`DROP TABLE account_balances`
      yield* sql`DROP FUNCTION ledger_balance_apply() CASCADE`
      yield* sql`
        INSERT INTO ledger (account_id, amount, kind, note)
        SELECT CASE WHEN g % 3 = 0 THEN ${b.id}::bigint ELSE ${a.id}::bigint END, g, 'top_up', null
        FROM generate_series(1, 3000) g`
      yield* sql.withTransaction(accountBalance)
      const filled = yield* balances([a.id, b.id])
      assert.deepStrictEqual(filled.map((x) => x.read), filled.map((x) => x.ledger))
      assert.deepStrictEqual(filled.map((x) => x.read), [3_000_000, 1_501_500])
      yield* billing.credit(b.id, 500, { kind: "top_up", note: null }, NOON)
      assert.deepStrictEqual(yield* balances([b.id]), [{ read: 1_502_000, ledger: 1_502_000 }])
    }))
})
