/**
 * The store on both kinds of database it runs on: a PostgreSQL server and the embedded PGlite.
 * Same migrations, same repositories, same answers.
 */
import { assert, describe, layer } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import { AccountId, NumberId } from "@wagate/domain/Ids"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { Accounts } from "../src/Accounts.js"
import * as ApiKeys from "../src/ApiKeys.js"
import { Billing } from "../src/Billing.js"
import * as Database from "../src/Database.js"
import * as Migrations from "../src/Migrations.js"
import { Messages } from "../src/Messages.js"

const repositories = (database: Layer.Layer<Database.Database, unknown>) =>
  Layer.mergeAll(Billing.Default, ApiKeys.ApiKeys.Default, Messages.Default).pipe(
    Layer.provideMerge(Accounts.Default),
    Layer.provideMerge(database)
  )

const suite = (name: string, database: Layer.Layer<Database.Database, unknown>, kind: "postgres" | "embedded") =>
  layer(repositories(database), { excludeTestServices: true, timeout: 60_000 })(name, (it) => {
    it.effect("runs the numbered migrations once", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        assert.strictEqual(yield* Database.DatabaseKind, kind)
        const migrations = yield* sql<{ migration_id: number; name: string }>`
          SELECT migration_id, name FROM wagate_migrations ORDER BY migration_id`
        const expected = (yield* Migrations.loader).map(([id, name]) => [id, name])
        assert.deepStrictEqual(migrations.map((m) => [m.migration_id, m.name]), expected)
        assert.deepStrictEqual(expected.slice(0, 2), [[1, "initial"], [2, "number_state"]])
        const tables = yield* sql<{ tablename: string }>`
          SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename`
        assert.includeMembers(tables.map((t) => t.tablename), [
          "accounts", "api_keys", "chats", "contacts", "daily_usage", "exports", "idempotency_keys", "ledger",
          "media_files", "messages", "numbers", "wa_auth_state", "webhook_deliveries", "webhook_endpoints",
          "webhook_outbox"
        ])
      }))

    it.effect("accounts, numbers, limits on numbers and the ledger", () =>
      Effect.gen(function*() {
        const accounts = yield* Accounts
        const account = yield* accounts.create({ email: `${kind}@example.kz`, company: "ACME" })
        const taken = yield* Effect.either(accounts.create({ email: `${kind.toUpperCase()}@example.kz`, company: "B" }))
        assert.isTrue(taken._tag === "Left" && taken.left._tag === "EmailTaken")
        const n = yield* accounts.addNumber(account.id, `7701${kind === "postgres" ? 1 : 2}000001`)
        assert.strictEqual(n.status, "none")
        const again = yield* Effect.either(accounts.addNumber(account.id, n.phone))
        assert.isTrue(again._tag === "Left" && again.left._tag === "PhoneTaken")
        const billing = yield* Billing
        const noon = Date.parse("2026-11-21T12:00:00Z")
        yield* billing.credit(account.id, 99_000, { kind: "top_up", note: null }, noon)
        yield* billing.credit(account.id, 50, { kind: "top_up", note: "half a tenge" }, noon)
        const funds = yield* accounts.funds(account.id, noon)
        // The first top-up settled the day: its number's 330 ₸ came off the 990.5 ₸ at once.
        assert.deepStrictEqual(
          [funds.balance, funds.daily_charge, funds.days_left, funds.active_numbers, funds.paidUntil],
          [660.5, 330, 2, 1, "2026-11-23T19:00:00.000Z"]
        )
        const byPhone = yield* accounts.findNumber(account.id, { phone: n.phone }, null)
        assert.strictEqual(Option.getOrThrow(byPhone).id, n.id)
        const elsewhere = yield* accounts.findNumber(account.id, { id: n.id }, NumberId.make(n.id + 1000))
        assert.isTrue(Option.isNone(elsewhere))
      }))

    it.effect("keys: issued once, found by hash, re-issued atomically", () =>
      Effect.gen(function*() {
        const accounts = yield* Accounts
        const keys = yield* ApiKeys.ApiKeys
        const account = yield* accounts.create({ email: `keys-${kind}@example.kz`, company: "K" })
        const issued = yield* keys.issue(account.id, null)
        const principal = yield* keys.findByHash(ApiKeys.hash(issued.key))
        assert.deepStrictEqual(Option.getOrThrow(principal), { keyId: issued.id, accountId: account.id, numberId: null })
        const sql = yield* SqlClient.SqlClient
        const stored = yield* sql<{ hash: Buffer; prefix: string }>`SELECT hash, prefix FROM api_keys WHERE id = ${issued.id}`
        assert.strictEqual(stored[0].prefix, issued.key.slice(0, 12))
        assert.notInclude(stored[0].hash.toString("utf8"), issued.key.slice(8))
        const reissued = Option.getOrThrow(yield* keys.reissue(issued.id))
        assert.isTrue(Option.isNone(yield* keys.findByHash(ApiKeys.hash(issued.key))))
        assert.isTrue(Option.isSome(yield* keys.findByHash(ApiKeys.hash(reissued.issued.key))))
        assert.isTrue(Option.isNone(yield* keys.reissue(issued.id)))
        // Looked up at once (one statement), each hash gets its own answer.
        const other = yield* keys.issue(account.id, null)
        const unknown = `wag_acc_${"x".repeat(32)}`
        const together = yield* Effect.all(
          [reissued.issued.key, unknown, other.key, issued.key].map((key) => keys.findByHash(ApiKeys.hash(key))),
          { concurrency: "unbounded" }
        )
        assert.deepStrictEqual(together.map((p) => Option.getOrNull(Option.map(p, (k) => k.keyId))), [reissued.issued.id, null, other.id, null])
        // Last uses written at once, each on its key; an older one never replaces a newer one.
        const later = new Date("2026-11-24T10:00:00.000Z")
        const earlier = new Date("2026-11-24T09:00:00.000Z")
        yield* Effect.all([
          keys.touch({ keyId: other.id, at: later }),
          keys.touch({ keyId: reissued.issued.id, at: earlier })
        ], { concurrency: "unbounded", discard: true })
        yield* keys.touch({ keyId: other.id, at: earlier })
        const used = yield* sql<{ id: string; last_used_at: Date | string | null }>`
          SELECT id, last_used_at FROM api_keys WHERE id IN (${other.id}, ${reissued.issued.id}) ORDER BY id`
        assert.deepStrictEqual(
          used.map((u) => u.last_used_at === null ? null : new Date(u.last_used_at).toISOString()),
          [reissued.issued.id, other.id].sort((a, b) => a - b).map((id) => (id === other.id ? later : earlier).toISOString())
        )
      }))

    it.effect("messages page by keyset, newest first", () =>
      Effect.gen(function*() {
        const accounts = yield* Accounts
        const messages = yield* Messages
        const sql = yield* SqlClient.SqlClient
        const account = yield* accounts.create({ email: `msgs-${kind}@example.kz`, company: "M" })
        const n = yield* accounts.addNumber(account.id, `7702${kind === "postgres" ? 1 : 2}000001`)
        yield* sql`
          INSERT INTO messages (account_id, number_id, direction, source, chat_id, peer, wa_message_id, type, text, status, created_at)
          SELECT ${account.id}, ${n.id}, CASE WHEN i % 2 = 0 THEN 'in' ELSE 'out' END, 'api', '77770000001@c.us',
                 '77770000001', 'W' || i, 'text', 'm' || i, 'sent', timestamptz '2026-11-01' + i * interval '1 minute'
          FROM generate_series(1, 25) AS i`
        const first = yield* messages.page({ accountId: account.id, numberId: null, limit: 10 }, null)
        assert.deepStrictEqual(first.messages.map((m) => m.text), Array.from({ length: 10 }, (_, i) => `m${25 - i}`))
        const second = yield* messages.page({ accountId: account.id, numberId: NumberId.make(n.id), limit: 10, before: first.next_before!, direction: "in" }, null)
        assert.deepStrictEqual(second.messages.map((m) => m.text), ["m14", "m12", "m10", "m8", "m6", "m4", "m2"])
        assert.strictEqual(second.next_before, null)
        const other = yield* messages.page({ accountId: AccountId.make(account.id + 1000), numberId: null, limit: 10 }, null)
        assert.strictEqual(other.messages.length, 0)
      }))
  })

describe("store", () => {
  suite("on PostgreSQL", Database.layerTest, "postgres")
  suite("on embedded PGlite", Database.layerEmbeddedTest, "embedded")
})
