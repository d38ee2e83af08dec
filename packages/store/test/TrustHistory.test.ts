/**
 * The trust index counts the people a number first contacted in its last 14 days. Contacts are
 * never deleted, so a number with a long history keeps many more: the count reads the contacts by
 * number and first contact (migration 0027), not every contact the number ever had
 * (docs/performance.md, "The trust index of a number with a long history").
 */
import { assert, layer } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Accounts } from "../src/Accounts.js"
import * as Database from "../src/Database.js"
import { NumberStates } from "../src/NumberStates.js"

const Env = Layer.mergeAll(Accounts.Default, NumberStates.Default).pipe(Layer.provideMerge(Database.layerTest))
const DAY_MS = 86_400_000

layer(Env, { excludeTestServices: true, timeout: 60_000 })("trust index of a number with a long history", (it) => {
  it.effect("counts the last 14 days' contacts through the index by first contact, not the number's whole address book", () =>
    Effect.gen(function*() {
      const accounts = yield* Accounts
      const states = yield* NumberStates
      const sql = yield* SqlClient.SqlClient
      const account = yield* accounts.create({ email: "trust-history@example.kz", company: "C" })
      const number = yield* accounts.addNumber(account.id, "77010000301")
      const other = yield* accounts.addNumber(account.id, "77010000302")
      const now = Date.now()
      const at = (daysAgo: number) => new Date(now - daysAgo * DAY_MS)
      // A year of contacts before the last 14 days, on both numbers; 30 in them, a third of which wrote first.
      for (const n of [number.id, other.id]) {
        yield* sql`
          INSERT INTO contacts (number_id, phone, wrote_first, first_contact_at, last_contact_at, first_out_at)
          SELECT ${n}, '7702' || lpad(g::text, 7, '0'), false, t, t, t
          FROM generate_series(1, 20000) g,
               LATERAL (SELECT ${at(380)}::timestamptz + g * interval '23 minutes') s(t)`
      }
      yield* sql`
        INSERT INTO contacts (number_id, phone, wrote_first, first_contact_at, last_contact_at, first_out_at)
        SELECT ${number.id}, '7701' || lpad(g::text, 7, '0'), g % 3 = 0, t, t, t
        FROM generate_series(1, 30) g, LATERAL (SELECT ${at(13)}::timestamptz + g * interval '1 hour') s(t)`
      yield* sql`ANALYZE contacts`
      const scans = sql<{ n: string }>`
        SELECT coalesce(sum(idx_scan), -1)::text AS n FROM pg_stat_user_indexes WHERE indexrelname = 'contacts_first_contact'`
      const before = Number((yield* scans)[0].n)
      assert.isAtLeast(before, 0, "the contacts' index by first contact exists")

      const inputs = yield* states.trustInputs(number.id, now, now - 365 * DAY_MS)
      assert.deepStrictEqual([inputs.dialogs, inputs.dialogsStartedByCustomers, inputs.coldFirstMessages], [30, 10, 20])

      // Statistics reach the view shortly after each statement: poll.
      const deadline = Date.now() + 40_000
      while (Number((yield* scans)[0].n) < before + 1) {
        if (Date.now() > deadline) return assert.fail("the count never read the contacts' index by first contact")
        yield* Effect.sleep("100 millis")
      }
    }))
})
