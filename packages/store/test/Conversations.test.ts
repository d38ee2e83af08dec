/**
 * The write side of conversations on PostgreSQL: a message replayed by the network is stored
 * once, statuses only move forward, an Idempotency-Key is claimed once, and events are written
 * with their change only for accounts with a webhook.
 */
import { assert, layer } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { Accounts } from "../src/Accounts.js"
import { Conversations, type IncomingRecord } from "../src/Conversations.js"
import * as Database from "../src/Database.js"

const Env = Layer.mergeAll(Accounts.Default, Conversations.Default).pipe(Layer.provideMerge(Database.layerTest))
const at = new Date("2026-11-21T10:00:00.000Z")

const setup = (email: string, phone: string) =>
  Effect.gen(function*() {
    const accounts = yield* Accounts
    const account = yield* accounts.create({ email, company: "C" })
    const number = yield* accounts.addNumber(account.id, phone)
    return { accountId: account.id, numberId: number.id }
  })

const incoming = (accountId: number, numberId: number, waMessageId: string): IncomingRecord => ({
  accountId,
  numberId,
  waMessageId,
  fromMe: false,
  chatId: "77770000001@c.us",
  peer: "77770000001",
  peerLid: null,
  name: "Dana",
  isGroup: false,
  groupSubject: null,
  author: null,
  type: "text",
  text: "hi",
  at,
  media: null,
  mediaPending: false,
  mediaSkipped: false,
  mediaSkipReason: null
})

layer(Env, { excludeTestServices: true, timeout: 60_000 })("conversations", (it) => {
  it.effect("a message replayed after a reconnect is stored once, with one event", () =>
    Effect.gen(function*() {
      const { accountId, numberId } = yield* setup("replay@example.kz", "77010000101")
      const sql = yield* SqlClient.SqlClient
      yield* sql`INSERT INTO webhook_endpoints (account_id, url, secret) VALUES (${accountId}, 'http://x', 's')`
      const conversations = yield* Conversations
      const first = yield* conversations.recordIncoming(incoming(accountId, numberId, "WAID1"))
      const replay = yield* conversations.recordIncoming(incoming(accountId, numberId, "WAID1"))
      assert.isTrue(Option.isSome(first))
      assert.isTrue(Option.isNone(replay))
      const [counts] = yield* sql<{ messages: string; events: string; chat_count: number }>`
        SELECT (SELECT count(*) FROM messages WHERE number_id = ${numberId}) AS messages,
               (SELECT count(*) FROM webhook_outbox WHERE account_id = ${accountId}) AS events,
               (SELECT message_count FROM chats WHERE number_id = ${numberId}) AS chat_count`
      assert.deepStrictEqual([Number(counts.messages), Number(counts.events), counts.chat_count], [1, 1, 1])
      const contact = yield* conversations.contact(numberId, "77770000001")
      assert.deepStrictEqual(Option.getOrThrow(contact), { wroteFirst: true })
    }))

  it.effect("statuses only move forward; failed only before delivery", () =>
    Effect.gen(function*() {
      const { accountId, numberId } = yield* setup("acks@example.kz", "77010000102")
      const conversations = yield* Conversations
      const sql = yield* SqlClient.SqlClient
      const record = (waMessageId: string) =>
        conversations.recordOutgoing({
          accountId, numberId, to: "77770000002", type: "text", text: "x", media: null, waMessageId,
          source: "api",
        phone: "77010000000", firstContact: true, textHash: "h", day: "2026-11-21", at
        })
      const status = (id: number) => Effect.map(sql<{ status: string }>`SELECT status FROM messages WHERE id = ${id}`, (r) => r[0].status)
      const id = yield* record("OUT1")
      assert.strictEqual(yield* status(id), "pending")
      for (const [ack, expected] of [["delivered", "delivered"], ["sent", "delivered"], ["read", "read"], ["delivered", "read"], ["failed", "read"]] as const) {
        yield* conversations.applyAck({ numberId, waMessageId: "OUT1", ack, at })
        assert.strictEqual(yield* status(id), expected, `after ${ack}`)
      }
      const other = yield* record("OUT2")
      yield* conversations.applyAck({ numberId, waMessageId: "OUT2", ack: "sent", at })
      yield* conversations.applyAck({ numberId, waMessageId: "OUT2", ack: "failed", error: "not delivered", at })
      assert.strictEqual(yield* status(other), "failed")
      // Without a webhook endpoint no event is written.
      const [events] = yield* sql<{ n: string }>`SELECT count(*) AS n FROM webhook_outbox WHERE account_id = ${accountId}`
      assert.strictEqual(Number(events.n), 0)
    }))

  it.effect("an Idempotency-Key is claimed once; the second claim rolls its message back", () =>
    Effect.gen(function*() {
      const { accountId, numberId } = yield* setup("idem@example.kz", "77010000103")
      const conversations = yield* Conversations
      const sql = yield* SqlClient.SqlClient
      const record = (waMessageId: string) =>
        Effect.either(conversations.recordOutgoing({
          accountId, numberId, to: "77770000003", type: "text", text: "x", media: null, waMessageId,
          source: "api",
        phone: "77010000000", firstContact: false, textHash: "h", day: "2026-11-21", at,
          idempotency: { key: "k1", requestHash: "r1" }
        }))
      assert.strictEqual((yield* record("A1"))._tag, "Right")
      const second = yield* record("A2")
      assert.isTrue(second._tag === "Left" && second.left._tag === "IdempotencyConflict")
      const rows = yield* sql<{ wa_message_id: string }>`SELECT wa_message_id FROM messages WHERE number_id = ${numberId}`
      assert.deepStrictEqual(rows.map((r) => r.wa_message_id), ["A1"])
      const [usage] = yield* sql<{ messages: number }>`SELECT messages FROM daily_usage WHERE number_id = ${numberId}`
      assert.strictEqual(usage.messages, 1)
    }))
})
