/**
 * The balance of an account with a long ledger. The balance is read at every settlement, payment,
 * refund and balance read, and with every number list (the funds beside each number); the ledger
 * gains a row a number a day and one for storage, so a 1,000-number account writes 365,000 rows a
 * year. Two accounts on PostgreSQL: the measured one with `--rows` ledger rows, the baseline in
 * the same run with `--small` rows; other accounts' rows as many again, so that a scan of the
 * whole table would cost both alike. Each account's funds (Accounts.funds, what the number lists
 * and GET /balance read) and balance (Billing.balance, what each change of money reads) are read
 * `--reads` times, one after another.
 *
 *   npm run bench -- balance [--rows 500000] [--small 100] [--reads 50]
 *
 * Target: the long ledger's median at most twice the short one's (a ratio, so that it holds on a
 * busy machine too; its p99 is printed beside it); a miss exits non-zero (`--no-fail` turns that
 * off). Results: docs/performance.md, "The balance of an account with a long ledger".
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { AccountId } from "@wagate/domain/Ids"
import { Accounts } from "@wagate/store/Accounts"
import { Billing } from "@wagate/store/Billing"
import * as Database from "@wagate/store/Database"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { parseArgs } from "node:util"
import { machine } from "./support/Processes.js"
import * as Timing from "./support/Timing.js"
import * as Verdict from "./support/Verdict.js"

/** The long ledger's median against the short one's, at most. */
const TARGET_RATIO = 2

const options = (argv: ReadonlyArray<string>) => {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      rows: { type: "string", default: "500000" },
      small: { type: "string", default: "100" },
      reads: { type: "string", default: "50" }
    }
  })
  return { rows: Number(values.rows), small: Number(values.small), reads: Number(values.reads) }
}

export const main = (argv: ReadonlyArray<string>) =>
  Effect.scoped(Effect.gen(function*() {
    const opts = options(argv)
    yield* Console.log(`balance benchmark: ${opts.rows} ledger rows on the measured account, ${opts.small} on the other; ${machine()}`)
    const url = yield* Database.scratchDatabase
    const env = yield* Layer.build(
      Billing.Default.pipe(
        Layer.provideMerge(Accounts.Default),
        Layer.provideMerge(Database.layerPostgres({ url: Redacted.make(url), maxConnections: 2 }))
      )
    )
    const sql = yield* Effect.provide(SqlClient.SqlClient, env)
    const started = Date.now()
    const accounts = yield* sql<{ id: string }>`
      INSERT INTO accounts (email, company)
      SELECT 'balance-bench-' || g || '@example.test', 'bench' FROM generate_series(1, 12) g RETURNING id::text`
    const [long, short, ...others] = accounts.map((a) => Number(a.id)) as [number, number, ...Array<number>]
    // A day's charges and now and then a top-up, over the years a long ledger takes.
    const ledger = (accountId: number, rows: number) =>
      sql`
        INSERT INTO ledger (account_id, amount, kind, note, created_at)
        SELECT ${accountId}, CASE WHEN g % 50 = 0 THEN 1650000 ELSE -33000 END,
               CASE WHEN g % 50 = 0 THEN 'top_up' ELSE 'number_day' END, null,
               now() - (${rows} - g) * interval '1 minute'
        FROM generate_series(1, ${rows}) g`
    yield* ledger(short, opts.small)
    yield* Effect.forEach(others, (id) => ledger(id, Math.ceil(opts.rows / others.length)))
    yield* ledger(long, opts.rows)
    yield* sql`VACUUM ANALYZE ledger`
    yield* Console.log(`seeded in ${Date.now() - started} ms`)

    const reads = (accountId: number) =>
      Effect.gen(function*() {
        const accountsRepo = yield* Accounts
        const billing = yield* Billing
        const id = AccountId.make(accountId)
        const funds = yield* Timing.sequential(accountsRepo.funds(id, Date.now()), { warmup: 5, runs: opts.reads })
        const balance = yield* Timing.sequential(billing.balance(id), { warmup: 5, runs: opts.reads })
        return { funds, balance }
      }).pipe(Effect.provide(env))
    const base = yield* reads(short)
    const measured = yield* reads(long)
    const check = (what: string, read: "funds" | "balance") =>
      Timing.medianAtMost(
        `${what} of an account with ${opts.rows} ledger rows: median vs one with ${opts.small}`,
        TARGET_RATIO,
        measured[read],
        base[read],
        `${opts.small} rows`
      )
    yield* Verdict.verdict("balance", [
      check("funds (number lists, GET /balance)", "funds"),
      check("balance (each change of money)", "balance")
    ])
  }))
