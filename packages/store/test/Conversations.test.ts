/**
 * The write side of conversations on PostgreSQL: a message replayed by the network is stored
 * once, statuses only move forward, an Idempotency-Key is claimed once, and events are written
 * with their change only for accounts with a webhook. Trust ratings written together lock their
 * numbers in id order, as billing does, so the two never deadlock.
 */
import { assert, layer } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { Accounts } from "../src/Accounts.js"
import { Conversations, type IncomingRecord } from "../src/Conversations.js"
import * as Database from "../src/Database.js"
import { NumberStates } from "../src/NumberStates.js"

const Env = Layer.mergeAll(Accounts.Default, Conversations.Default, NumberStates.Default).pipe(Layer.provideMerge(Database.layerTest))
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
      yield* sql`INSERT INTO webhook_endpoints (account_id, url, secret) VALUES (${accountId}, 'http://x', 'enc:v1:sealed')`
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
      // Asked at once (one statement), each question gets its own answer.
      const together = yield* Effect.all(
        ["77770000009", "77770000001", "77770000008"].map((phone) => conversations.contact(numberId, phone)),
        { concurrency: "unbounded" }
      )
      assert.deepStrictEqual(together.map(Option.getOrNull), [null, { wroteFirst: true }, null])
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

  it.effect("an ack after `sent` can update its row in place: no index of messages names what an ack sets", () =>
    Effect.gen(function*() {
      const { accountId, numberId } = yield* setup("in-place@example.kz", "77010000108")
      const conversations = yield* Conversations
      const sql = yield* SqlClient.SqlClient
      const id = yield* conversations.recordOutgoing({
        accountId, numberId, to: "77770000005", type: "text", text: "x", media: null, waMessageId: "INPLACE1",
        source: "api", phone: "77010000000", firstContact: true, textHash: "h", day: "2026-11-21", at
      })
      // Until `sent`, the message is unsent: the number's sweep finds it and hands it over again.
      assert.deepStrictEqual((yield* conversations.pending(numberId)).map((p) => p.id), [id])
      assert.isTrue((yield* conversations.sweepDue(numberId, at)).pending)
      yield* conversations.applyAck({ numberId, waMessageId: "INPLACE1", ack: "sent", at })
      assert.deepStrictEqual(yield* conversations.pending(numberId), [])
      assert.isFalse((yield* conversations.sweepDue(numberId, at)).pending)
      // `delivered` and `read` set status, error and updated_at. An index naming any of them (as
      // the pending index once named status) would make each ack a new version in every index of
      // the table; with none, PostgreSQL updates the row within its page, which keeps room for it.
      const indexes = yield* sql<{ name: string; definition: string }>`
        SELECT indexrelid::regclass::text AS name, pg_get_indexdef(indexrelid) AS definition
        FROM pg_index WHERE indrelid = 'messages'::regclass`
      assert.isAbove(indexes.length, 10)
      assert.deepStrictEqual(indexes.filter((i) => /\b(status|error|updated_at)\b/.test(i.definition)).map((i) => i.name), [])
      const [table] = yield* sql<{ options: Array<string> | null }>`
        SELECT reloptions AS options FROM pg_class WHERE oid = 'messages'::regclass`
      assert.deepStrictEqual(table.options, ["fillfactor=80"])
    }))

  it.effect("acks arriving together, repeats included, move the status in order and notify each step once", () =>
    Effect.gen(function*() {
      const { accountId, numberId } = yield* setup("acks-together@example.kz", "77010000104")
      const conversations = yield* Conversations
      const sql = yield* SqlClient.SqlClient
      yield* sql`INSERT INTO webhook_endpoints (account_id, url, secret) VALUES (${accountId}, 'http://x', 'enc:v1:sealed')`
      const id = yield* conversations.recordOutgoing({
        accountId, numberId, to: "77770000004", type: "text", text: "x", media: null, waMessageId: "TOGETHER1",
        source: "api", phone: "77010000000", firstContact: true, textHash: "h", day: "2026-11-21", at
      })
      // The send's own `sent` and the network's, then the rest, all queued before the writer runs.
      yield* Effect.all(
        (["sent", "sent", "delivered", "delivered", "read"] as const).map((ack) =>
          conversations.applyAck({ numberId, waMessageId: "TOGETHER1", ack, at })
        ),
        { concurrency: "unbounded", discard: true }
      )
      const [row] = yield* sql<{ status: string }>`SELECT status FROM messages WHERE id = ${id}`
      assert.strictEqual(row.status, "read")
      const events = yield* sql<{ ack: string }>`
        SELECT payload->'data'->>'ack' AS ack FROM webhook_outbox
        WHERE account_id = ${accountId} AND payload->>'event' = 'message.ack' ORDER BY id`
      assert.deepStrictEqual(events.map((e) => e.ack), ["sent", "delivered", "read"])
    }))

  it.effect("trust inputs of numbers asked at once (one statement) are each number's own", () =>
    Effect.gen(function*() {
      const conversations = yield* Conversations
      const states = yield* NumberStates
      const wroteFirst = yield* setup("trust-a@example.kz", "77010000105")
      const cold = yield* setup("trust-b@example.kz", "77010000106")
      const quiet = yield* setup("trust-c@example.kz", "77010000107")
      yield* conversations.recordIncoming(incoming(wroteFirst.accountId, wroteFirst.numberId, "TRUST-IN"))
      yield* conversations.recordOutgoing({
        accountId: cold.accountId, numberId: cold.numberId, to: "77770000005", type: "text", text: "x", media: null,
        waMessageId: "TRUST-OUT", source: "api", phone: "77010000106", firstContact: true, textHash: "h", day: "2026-11-21", at
      })
      const now = at.getTime() + 60 * 60 * 1000
      const [a, b, c] = yield* Effect.all(
        [wroteFirst, cold, quiet].map((n) => states.trustInputs(n.numberId, now, null)),
        { concurrency: "unbounded" }
      )
      const counts = (i: typeof a) => [i.dialogs, i.dialogsStartedByCustomers, i.incoming, i.outgoing]
      assert.deepStrictEqual([counts(a), counts(b), counts(c)], [[1, 1, 1, 0], [1, 0, 0, 1], [0, 0, 0, 0]])
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
  const recordAtOnce = (prefix: string, reuseKey: boolean) =>
    Effect.gen(function*() {
      const conversations = yield* Conversations
      const sql = yield* SqlClient.SqlClient
      const numbers = yield* Effect.forEach(Array.from({ length: 12 }, (_, i) => i), (i) =>
        setup(`${prefix}${i}@example.kz`, `77010${prefix === "batch" ? "2" : "3"}000${String(i).padStart(2, "0")}`))
      const record = (n: { accountId: number; numberId: number }, waMessageId: string, to: string, key?: string) =>
        Effect.either(conversations.recordOutgoing({
          accountId: n.accountId, numberId: n.numberId, to, type: "text", text: `to ${to}`, media: null, waMessageId,
          source: "api", phone: "77010000000", firstContact: true, textHash: "h", day: "2026-11-21", at,
          idempotency: key === undefined ? undefined : { key, requestHash: waMessageId }
        }))
      // Every number sends three messages at once (two to one peer), the first with a key;
      // with `reuseKey` number 0 uses its key twice, and that message alone must fail.
      const sends = numbers.flatMap((n, i) => [
        { n, waMessageId: `${prefix}${i}-1`, to: "77770000501", key: `key-${i}` },
        { n, waMessageId: `${prefix}${i}-2`, to: "77770000501", key: i === 0 && reuseKey ? "key-0" : undefined },
        { n, waMessageId: `${prefix}${i}-3`, to: "77770000502", key: undefined }
      ])
      const results = yield* Effect.forEach(sends, (s) => record(s.n, s.waMessageId, s.to, s.key), { concurrency: "unbounded" })
      const failed = sends.filter((_, i) => results[i]._tag === "Left").map((s) => s.waMessageId)
      assert.deepStrictEqual(failed, reuseKey ? [`${prefix}0-2`] : [])
      if (reuseKey) {
        const left = results[1]
        assert.isTrue(left._tag === "Left" && left.left._tag === "IdempotencyConflict")
      }
      // Each id is its own message's.
      const ids = results.flatMap((r, i) => (r._tag === "Right" ? [[r.right, sends[i].waMessageId] as const] : []))
      const rows = yield* sql<{ id: string; wa_message_id: string }>`
        SELECT id, wa_message_id FROM messages WHERE wa_message_id LIKE ${prefix + "%"} ORDER BY id`
      assert.deepStrictEqual(
        rows.map((r) => [Number(r.id), r.wa_message_id]),
        [...ids].sort((a, b) => a[0] - b[0]).map(([id, wa]) => [id, wa])
      )
      for (const [i, n] of numbers.entries()) {
        const sent = i === 0 && reuseKey ? 2 : 3
        const chats = yield* sql<{ chat_id: string; message_count: number; outgoing_count: number; last_message_id: string }>`
          SELECT chat_id, message_count, outgoing_count, last_message_id FROM chats WHERE number_id = ${n.numberId} ORDER BY chat_id`
        const last = (wa: string) => String(ids.find(([, w]) => w === wa)![0])
        assert.deepStrictEqual(chats.map((c) => [c.chat_id, c.message_count, c.outgoing_count]), [
          ["77770000501@c.us", sent - 1, sent - 1],
          ["77770000502@c.us", 1, 1]
        ])
        assert.strictEqual(chats[1].last_message_id, last(`${prefix}${i}-3`))
        const [usage] = yield* sql<{ messages: number; new_contacts: number }>`
          SELECT messages, new_contacts FROM daily_usage WHERE number_id = ${n.numberId}`
        assert.deepStrictEqual([usage.messages, usage.new_contacts], [sent, sent])
        const contacts = yield* sql<{ phone: string }>`SELECT phone FROM contacts WHERE number_id = ${n.numberId} ORDER BY phone`
        assert.deepStrictEqual(contacts.map((c) => c.phone), ["77770000501", "77770000502"])
        const answer = yield* conversations.findAnswer(n.accountId, `key-${i}`, new Date(0))
        assert.deepStrictEqual(Option.map(answer, (a) => a.answer), Option.some({
          status: 200,
          body: { ok: true, id: Number(last(`${prefix}${i}-1`)), wa_message_id: `${prefix}${i}-1`, from: { id: n.numberId, phone: "77010000000" } }
        }))
      }
    })

  it.effect("messages recorded at once by many numbers land as each alone would", () => recordAtOnce("batch", false))

  it.effect("of messages recorded at once, a used Idempotency-Key fails only its own message", () => recordAtOnce("reuse", true))
})

layer(Env, { excludeTestServices: true, timeout: 60_000 })("sweeps", (it) => {
  it.effect("the sweeps of many numbers asked at once each get their own number's answer", () =>
    Effect.gen(function*() {
      const conversations = yield* Conversations
      // Four kinds of number, three of each: nothing to do, a pending send, a kept incoming event
      // due now, and one due only later.
      const numbers = yield* Effect.forEach(Array.from({ length: 12 }, (_, i) => i), (i) =>
        setup(`sweep${i}@example.kz`, `770104000${String(i).padStart(2, "0")}`))
      const kind = (i: number) => i % 4
      yield* Effect.forEach(numbers, (n, i) =>
        kind(i) === 1
          ? conversations.recordOutgoing({
            accountId: n.accountId, numberId: n.numberId, to: "77770000009", type: "text", text: "x", media: null,
            waMessageId: `SW${i}`, source: "api", phone: "77010000000", firstContact: false, textHash: "h",
            day: "2026-11-21", at
          })
          : kind(i) === 2
          ? conversations.keepFailedIncoming(n.numberId, "{}", "store down", new Date(at.getTime() - 1000))
          : kind(i) === 3
          ? conversations.keepFailedIncoming(n.numberId, "{}", "store down", new Date(at.getTime() + 60_000))
          : Effect.void)
      const answers = yield* Effect.forEach(numbers, (n) => conversations.sweepDue(n.numberId, at), { concurrency: "unbounded" })
      assert.deepStrictEqual(
        answers,
        numbers.map((_, i) => ({ pending: kind(i) === 1, incoming: kind(i) === 2 }))
      )
    }))
  it.effect("ratings set at once lock their numbers in id order, as billing does: they never deadlock with it", () =>
    Effect.gen(function*() {
      const accounts = yield* Accounts
      const states = yield* NumberStates
      const sql = yield* SqlClient.SqlClient
      const account = yield* accounts.create({ email: "ratings-lock@example.kz", company: "C" })
      const low = yield* accounts.addNumber(account.id, "77010000121")
      const high = yield* accounts.addNumber(account.id, "77010000122")
      const other = yield* accounts.addNumber(account.id, "77010000123")
      // A row updated since lies after the rows inserted beside it: a scan of the table meets the
      // higher ids first.
      yield* sql`UPDATE numbers SET trust_rating = 0 WHERE id = ${low.id}`
      /** A transaction that locks `ids` one after the other, each when told. */
      const locker = (ids: ReadonlyArray<number>) =>
        Effect.gen(function*() {
          const steps = yield* Effect.forEach(ids, () => Deferred.make<void>())
          const locked = yield* Effect.forEach(ids, () => Deferred.make<void>())
          const done = yield* Deferred.make<void>()
          const fiber = yield* Effect.fork(sql.withTransaction(Effect.gen(function*() {
            for (const [i, id] of ids.entries()) {
              yield* Deferred.await(steps[i])
              yield* sql`SELECT id FROM numbers WHERE id = ${id} FOR NO KEY UPDATE`
              yield* Deferred.succeed(locked[i], undefined)
            }
            yield* Deferred.await(done)
          })))
          const step = (i: number) => Effect.zipRight(Deferred.succeed(steps[i], undefined), Deferred.await(locked[i]))
          return { step, finish: Effect.zipRight(Deferred.succeed(done, undefined), Fiber.join(fiber)) }
        })
      /** Polls until `n` rating statements wait for a lock. */
      const ratingsWaiting = (n: number) =>
        Effect.gen(function*() {
          const deadline = Date.now() + 20_000
          while ((yield* sql<{ n: number }>`
            SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%trust_rating%'`)[0].n < n) {
            if (Date.now() > deadline) return yield* Effect.dieMessage("the ratings never waited for the lock")
            yield* Effect.sleep("20 millis")
          }
        })
      // Something else holds `other`: the ratings' writer waits on it while the next two queue up.
      const holder = yield* locker([other.id])
      yield* holder.step(0)
      const first = yield* Effect.fork(states.setRating(other.id, 1))
      yield* ratingsWaiting(1)
      // What billing does: the account's numbers locked in id order, in one transaction.
      const billing = yield* locker([low.id, high.id])
      yield* billing.step(0)
      // Two ratings queued together, the higher id first: one statement once the writer is free.
      const rated = yield* Effect.fork(Effect.all([states.setRating(high.id, 3), states.setRating(low.id, 4)], {
        concurrency: "unbounded"
      }))
      yield* holder.finish
      yield* Fiber.join(first)
      yield* ratingsWaiting(1)
      // Billing goes on to its next number while the ratings wait for the first.
      yield* billing.step(1)
      yield* billing.finish
      yield* Fiber.join(rated)
      const rows = yield* sql<{ trust_rating: number }>`
        SELECT trust_rating FROM numbers WHERE id IN (${low.id}, ${high.id}, ${other.id}) ORDER BY id`
      assert.deepStrictEqual(rows.map((r) => r.trust_rating), [4, 3, 1])
    }), 60_000)
})
