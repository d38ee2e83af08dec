/**
 * The trust index of a number with a long history. Every working number recomputes its trust
 * index every five minutes (NumberCounters), and every number at once after a restart; it counts
 * the people the number first contacted in its last 14 days. Contacts are never deleted (they are
 * the address book), so a number that has sent cold messages for a year keeps hundreds of
 * thousands of them; a count that reads them all costs in proportion to the number's whole
 * history, not to its last 14 days. Two numbers of one account on PostgreSQL, each with
 * `--recent` contacts first contacted in the last 14 days and the messages that go with them; the
 * measured one also has `--history` contacts from the year before. The baseline, in the same run:
 * the number without the history. Each number's trust inputs (NumberStates.trustInputs, the
 * statement the entity runs) are read `--reads` times, one after another.
 *
 *   npm run bench -- trust-index [--recent 10000] [--history 300000] [--reads 50]
 *
 * Target: the long-history number's median at most twice the other's (a ratio, so that it holds
 * on a busy machine too; its p99 is printed beside it); a miss exits non-zero (`--no-fail` turns
 * that off). Results: docs/performance.md, "The trust index of a number with a long history".
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Database from "@wagate/store/Database"
import { NumberStates } from "@wagate/store/NumberStates"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { parseArgs } from "node:util"
import { machine } from "./support/Processes.js"
import * as Timing from "./support/Timing.js"
import * as Verdict from "./support/Verdict.js"

/** The long-history number's median against the other's, at most. */
const TARGET_RATIO = 2

const DAY_MS = 86_400_000

const options = (argv: ReadonlyArray<string>) => {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      recent: { type: "string", default: "10000" },
      history: { type: "string", default: "300000" },
      reads: { type: "string", default: "50" }
    }
  })
  return { recent: Number(values.recent), history: Number(values.history), reads: Number(values.reads) }
}

/** `reads` reads of the number's trust inputs one after another (after five to warm up): p50 and p99 in ms. */
const latencies = (numberId: number, now: number, reads: number) =>
  Effect.flatMap(NumberStates, (states) =>
    Timing.sequential(
      Effect.gen(function*() {
        const inputs = yield* states.trustInputs(numberId, now, now - 365 * DAY_MS)
        if (inputs.dialogs === 0) return yield* Effect.dieMessage(`number ${numberId}: no dialogs counted`)
      }),
      { warmup: 5, runs: reads }
    ))

export const main = (argv: ReadonlyArray<string>) =>
  Effect.scoped(Effect.gen(function*() {
    const opts = options(argv)
    yield* Console.log(
      `trust index benchmark: ${opts.recent} contacts of the last 14 days, ${opts.history} older ones on the measured number; ${machine()}`
    )
    const url = yield* Database.scratchDatabase
    const env = yield* Layer.build(
      NumberStates.Default.pipe(Layer.provideMerge(Database.layerPostgres({ url: Redacted.make(url), maxConnections: 2 })))
    )
    const sql = yield* Effect.provide(SqlClient.SqlClient, env)
    const now = Date.now()
    const started = Date.now()
    const [account] = yield* sql<{ id: string }>`
      INSERT INTO accounts (email, company) VALUES ('trust-bench@example.test', 'bench') RETURNING id::text`
    const numbers = yield* sql<{ id: string }>`
      INSERT INTO numbers (account_id, phone, status, linked)
      VALUES (${account!.id}, '77000000001', 'WORKING', true), (${account!.id}, '77000000002', 'WORKING', true)
      RETURNING id::text`
    const [measured, baseline] = numbers.map((n) => Number(n.id)) as [number, number]
    // The same last 14 days on both numbers: a contact a minute or so, each with its first message.
    for (const numberId of [measured, baseline]) {
      yield* sql`
        INSERT INTO contacts (number_id, phone, wrote_first, first_contact_at, last_contact_at, first_out_at)
        SELECT ${numberId}, '7701' || lpad(g::text, 7, '0'), g % 3 = 0, t, t, t
        FROM generate_series(1, ${opts.recent}) g,
             LATERAL (SELECT to_timestamp(${now / 1000}) - interval '13 days' + g * (interval '12 days' / ${opts.recent})) s(t)`
      yield* sql`
        INSERT INTO messages (account_id, number_id, direction, source, chat_id, peer, wa_message_id, type, text,
                              status, first_contact, created_at, updated_at)
        SELECT ${account!.id}, ${numberId}, 'out', 'api', '7701' || lpad(g::text, 7, '0') || '@c.us',
               '7701' || lpad(g::text, 7, '0'), 'w' || g, 'text', 'hello', 'delivered', true, t, t
        FROM generate_series(1, ${opts.recent}) g,
             LATERAL (SELECT to_timestamp(${now / 1000}) - interval '13 days' + g * (interval '12 days' / ${opts.recent})) s(t)`
    }
    // The measured number's year before: contacts only (its messages are past the retention).
    yield* sql`
      INSERT INTO contacts (number_id, phone, wrote_first, first_contact_at, last_contact_at, first_out_at)
      SELECT ${measured}, '7702' || lpad(g::text, 7, '0'), g % 3 = 0, t, t, t
      FROM generate_series(1, ${opts.history}) g,
           LATERAL (SELECT to_timestamp(${now / 1000}) - interval '380 days' + g * (interval '360 days' / ${opts.history})) s(t)`
    // The other numbers of the gateway: as many contacts again, spread over 100 numbers, so that the
    // table is not one number's (a scan of the whole table would cost both measured numbers alike).
    yield* sql`
      INSERT INTO numbers (account_id, phone, status, linked)
      SELECT ${account!.id}, '7790' || lpad(g::text, 7, '0'), 'WORKING', true FROM generate_series(1, 100) g`
    yield* sql`
      INSERT INTO contacts (number_id, phone, wrote_first, first_contact_at, last_contact_at, first_out_at)
      SELECT n.id, '7703' || lpad(g::text, 7, '0'), false, t, t, t
      FROM numbers n, generate_series(1, ${Math.ceil(opts.history / 100)}) g,
           LATERAL (SELECT to_timestamp(${now / 1000}) - interval '380 days' + g * (interval '375 days' / ${Math.ceil(opts.history / 100)})) s(t)
      WHERE n.phone LIKE '7790%'`
    yield* sql`VACUUM ANALYZE contacts`
    yield* sql`ANALYZE messages`
    yield* Console.log(`seeded in ${Date.now() - started} ms`)

    const base = yield* Effect.provide(latencies(baseline, now, opts.reads), env)
    const long = yield* Effect.provide(latencies(measured, now, opts.reads), env)
    yield* Console.log(
      `trust inputs: long-history number p50 ${long.p50.toFixed(1)} ms, p99 ${long.p99.toFixed(1)} ms; ` +
        `number without history p50 ${base.p50.toFixed(1)} ms, p99 ${base.p99.toFixed(1)} ms`
    )
    yield* Verdict.verdict("trust-index", [
      Timing.medianAtMost(
        `trust inputs of a number with ${opts.history} older contacts: median vs the same number without them`,
        TARGET_RATIO,
        long,
        base,
        "no history"
      )
    ])
  }))
