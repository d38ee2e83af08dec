/**
 * The number entities through HTTP beyond a single send: idempotent retries, 503 capacity when
 * no runner answers, a runner of the previous release during a rolling upgrade, GET /limits,
 * contact checks, incoming messages and acks with their webhook events, linking, and limits that
 * hold across a runner restart.
 */
import { assert, describe, it } from "@effect/vitest"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Almaty from "@wagate/domain/Almaty"
import * as Effect from "effect/Effect"
import { execFile } from "node:child_process"
import { join } from "node:path"
import { cabinetSettings, mailbox, signedUp } from "../support/Cabinet.js"
import { eventually, linked, provision, seedMessages, uniquePhone } from "../support/Fixtures.js"
import * as ManualClock from "../support/ManualClock.js"
import * as PreviousRunner from "../support/PreviousRunner.js"
import {
  freshDatabase,
  OPERATOR_TOKEN,
  type RunningGateway,
  simulatedNetwork,
  sql,
  startGateway,
  stoppable
} from "../support/TestGateway.js"

const NOON = Date.parse("2026-11-23T07:00:00.000Z")

const post = (gateway: RunningGateway, path: string, key: string, body: unknown, headers: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const response = yield* gateway.http.execute(
      HttpClientRequest.post(path).pipe(
        HttpClientRequest.setHeaders({ authorization: `Bearer ${key}`, ...headers }),
        HttpClientRequest.bodyUnsafeJson(body)
      )
    )
    return { status: response.status, body: (yield* response.json) as any, headers: response.headers }
  })
const get = (gateway: RunningGateway, path: string, key: string) =>
  Effect.gen(function*() {
    const response = yield* gateway.http.get(path, { headers: { authorization: `Bearer ${key}` } })
    return { status: response.status, body: (yield* response.json) as any, headers: response.headers }
  })
const code = (a: { status: number; body: any }) => `${a.status} ${a.body.code ?? "ok"}`

describe("idempotency", () => {
  it.scopedLive("a retry with the same Idempotency-Key gets the first answer and sends once", () =>
    Effect.gen(function*() {
      const time = ManualClock.make(NOON)
      const gateway = yield* startGateway(yield* freshDatabase, { domainClock: time.clock })
      const acme = yield* provision(gateway.ops)
      const to = uniquePhone()
      const body = { to, text: "Order 1042 confirmed" }
      const first = yield* post(gateway, "/api/v1/messages/send", acme.accountKey, body, { "idempotency-key": "order-1042" })
      assert.strictEqual(first.status, 200)
      time.adjust("10 seconds")
      const retry = yield* post(gateway, "/api/v1/messages/send", acme.accountKey, body, { "idempotency-key": "order-1042" })
      assert.deepStrictEqual([retry.status, retry.body], [200, first.body])
      assert.strictEqual(retry.headers["idempotent-replayed"], "true")
      assert.strictEqual((yield* gateway.sim.sent({ to })).length, 1)
      const other = yield* post(gateway, "/api/v1/messages/send", acme.accountKey, { to, text: "different" }, { "idempotency-key": "order-1042" })
      assert.strictEqual(code(other), "400 invalid_param")
      const bad = yield* post(gateway, "/api/v1/messages/send", acme.accountKey, body, { "idempotency-key": "x".repeat(256) })
      assert.strictEqual(code(bad), "400 invalid_param")

      // A refusal by the network is remembered too: the retry answers 502 again, sending nothing.
      const refusing = uniquePhone()
      yield* gateway.sim.failures(refusing, { mode: "reject", times: 1 })
      time.adjust("10 seconds")
      const failed = yield* post(gateway, "/api/v1/messages/send", acme.accountKey, { to: refusing, text: "x" }, { "idempotency-key": "k2" })
      assert.strictEqual(code(failed), "502 send_failed")
      time.adjust("10 seconds")
      const again = yield* post(gateway, "/api/v1/messages/send", acme.accountKey, { to: refusing, text: "x" }, { "idempotency-key": "k2" })
      assert.deepStrictEqual([again.status, again.body], [502, failed.body])
      assert.strictEqual((yield* gateway.sim.sent({ to: refusing })).length, 0)
    }))
})

describe("503 capacity", () => {
  it.scopedLive("an api process answers 503 capacity with Retry-After when no runner holds the number", () =>
    Effect.gen(function*() {
      const database = yield* freshDatabase
      const network = yield* simulatedNetwork
      const runner = yield* stoppable(startGateway(database, { sim: network }))
      const api = yield* startGateway(database, { role: "api", sim: network, settings: { entityTimeoutMs: 1500 } })
      const acme = yield* provision(runner.ops)
      assert.strictEqual(code(yield* post(api, "/api/v1/messages/send", acme.accountKey, { to: uniquePhone(), text: "x" })), "200 ok")
      yield* runner.stop
      for (const answer of [
        yield* post(api, "/api/v1/messages/send", acme.accountKey, { to: uniquePhone(), text: "x" }),
        yield* get(api, "/api/v1/limits", acme.accountKey),
        yield* post(api, "/api/v1/contacts/check", acme.accountKey, { phone: uniquePhone() })
      ]) {
        assert.strictEqual(code(answer), "503 capacity")
        assert.strictEqual(answer.headers["retry-after"], "5")
      }
      // Reads come from PostgreSQL and keep working.
      assert.strictEqual((yield* get(api, "/api/v1/messages", acme.accountKey)).status, 200)
      // A number added meanwhile is added (and charged): the refusal says so and how to link it,
      // since adding it again would answer phone_taken.
      const phone = uniquePhone()
      const added = yield* Effect.flip(api.ops.ops.addNumber({ path: { id: acme.accountId }, payload: { phone } }))
      const { numbers } = yield* get(api, "/api/v1/numbers", acme.accountKey).pipe(Effect.map((r) => r.body))
      const id = numbers.find((n: any) => n.phone === phone)?.id
      assert.isDefined(id, "the number was added")
      assert.deepStrictEqual([(added as any).code, (added as any).error], [
        "capacity",
        `Number ${id} was added, but it could not start linking (The number did not answer in time): ` +
        `link it with POST /ops/v1/numbers/${id}/link (CLI: number link --number ${id})`
      ])
      const again = yield* Effect.flip(api.ops.ops.addNumber({ path: { id: acme.accountId }, payload: { phone } }))
      assert.strictEqual((again as any).code, "phone_taken")
    }), { timeout: 60_000 })
})

describe("a rolling upgrade", () => {
  it.scopedLive("an api process of this release reads limits from a runner of the previous one, which sends no pause_reason, and replays a send", () =>
    Effect.gen(function*() {
      const database = yield* freshDatabase
      const network = yield* simulatedNetwork
      const runner = yield* stoppable(startGateway(database, { sim: network }))
      const api = yield* startGateway(database, { role: "api", sim: network })
      const acme = yield* provision(runner.ops)
      const body = { to: uniquePhone(), text: "Order 1042 confirmed" }
      const first = yield* post(api, "/api/v1/messages/send", acme.accountKey, body, { "idempotency-key": "order-1042" })
      assert.strictEqual(first.status, 200)

      // The runner is replaced by one of the previous release, whose limits have no pause_reason.
      yield* runner.stop
      const previous: PreviousRunner.PreviousLimits = {
        rating: 70,
        tier: "good",
        tier_title: "Good",
        enough_data: true,
        limits: { messages_per_day: 1000, new_contacts_per_day: 150, checks_per_day: 200, messages_per_second: 1 },
        used: { messages: 1, new_contacts: 1, checks: 0 },
        cold_blocked_until: null,
        warmup: false,
        paused: false
      }
      yield* PreviousRunner.start(database, previous)
      // 503 capacity until it holds the number's shard.
      const limits = yield* eventually(get(api, "/api/v1/limits", acme.accountKey), (r) => r.status !== 503, 30_000)
      assert.deepStrictEqual([limits.status, limits.body], [200, { ...previous, pause_reason: null }])
      const retry = yield* post(api, "/api/v1/messages/send", acme.accountKey, body, { "idempotency-key": "order-1042" })
      assert.deepStrictEqual([retry.status, retry.body], [200, first.body])
      assert.strictEqual(retry.headers["idempotent-replayed"], "true")
      assert.strictEqual(retry.headers["x-ratelimit-remaining"], "999")
    }), { timeout: 60_000 })
})

describe("GET /limits", () => {
  it.scopedLive("every field; from_required, no_numbers, number_not_found, invalid_from", () =>
    Effect.gen(function*() {
      const time = ManualClock.make(NOON)
      const gateway = yield* startGateway(yield* freshDatabase, { domainClock: time.clock })
      const acme = yield* provision(gateway.ops, { numbers: 2 })
      const empty = yield* provision(gateway.ops, { numbers: 0 })
      const other = yield* provision(gateway.ops)
      assert.strictEqual(code(yield* get(gateway, "/api/v1/limits", acme.accountKey)), "400 from_required")
      assert.strictEqual(code(yield* get(gateway, "/api/v1/limits", empty.accountKey)), "409 no_numbers")
      assert.strictEqual(code(yield* get(gateway, `/api/v1/limits?from=${other.numbers[0].id}`, acme.accountKey)), "404 number_not_found")
      assert.strictEqual(code(yield* get(gateway, "/api/v1/limits?from=x1", acme.accountKey)), "400 invalid_from")
      const api = yield* gateway.client(acme.accountKey)
      const limits = yield* api.limits.get({ urlParams: { from: acme.numbers[1].phone } })
      assert.deepStrictEqual(limits, {
        rating: limits.rating,
        tier: "good",
        tier_title: "Good",
        enough_data: false,
        limits: { messages_per_day: 200, new_contacts_per_day: 30, checks_per_day: 200, messages_per_second: 1 },
        used: { messages: 0, new_contacts: 0, checks: 0 },
        cold_blocked_until: null,
        warmup: true,
        paused: false,
        pause_reason: null
      })
      assert.isTrue(limits.rating >= 0 && limits.rating <= 100)
      // A number key needs no from.
      assert.strictEqual((yield* get(gateway, "/api/v1/limits", acme.numberKeys[0])).status, 200)
      // After the warm-up the standard limits apply.
      time.adjust("3 days")
      const later = yield* api.limits.get({ urlParams: { from: String(acme.numbers[1].id) } })
      assert.deepStrictEqual([later.warmup, later.limits.messages_per_day, later.limits.new_contacts_per_day], [false, 1000, 150])
    }))

  it.scopedLive("the trust index sets the tier and the tier the limits", () =>
    Effect.gen(function*() {
      const time = ManualClock.make(NOON)
      const gateway = yield* startGateway(yield* freshDatabase, { domainClock: time.clock })
      const support = yield* provision(gateway.ops)
      const mailer = yield* provision(gateway.ops)
      time.adjust("20 days")
      const at = new Date(time.now() - 3 * 86_400_000)
      // A support number: 40 customers wrote first and got answers.
      // A mailer: 60 people written to first, 2 answered, a fifth of the messages failed.
      yield* sql(gateway.database, (sql) =>
        Effect.gen(function*() {
          const seed = (numberId: number, accountId: number, people: number, wroteFirst: boolean, answered: number, failed: number) =>
            Effect.forEach(Array.from({ length: people }, (_, i) => i), (i) =>
              Effect.gen(function*() {
                const phone = `7799${numberId}${String(i).padStart(4, "0")}`
                yield* sql`INSERT INTO contacts (number_id, phone, wrote_first, first_contact_at, last_contact_at, first_in_at, first_out_at)
                  VALUES (${numberId}, ${phone}, ${wroteFirst}, ${at}, ${at}, ${wroteFirst || i < answered ? at : null}, ${at})`
                for (const direction of wroteFirst || i < answered ? ["in", "out"] : ["out"]) {
                  yield* sql`INSERT INTO messages (account_id, number_id, direction, source, chat_id, peer, wa_message_id, type, text, status, created_at)
                    VALUES (${accountId}, ${numberId}, ${direction}, 'api', ${`${phone}@c.us`}, ${phone}, ${`S${numberId}-${i}-${direction}`},
                            'text', 'x', ${direction === "out" && i < failed ? "failed" : "delivered"}, ${at})`
                }
              }), { discard: true })
          yield* seed(support.numbers[0].id, support.accountId, 40, true, 40, 0)
          yield* seed(mailer.numbers[0].id, mailer.accountId, 60, false, 2, 12)
        }))
      // The index is recomputed at most every 5 minutes.
      time.adjust("6 minutes")
      const good = yield* (yield* gateway.client(support.accountKey)).limits.get({ urlParams: {} })
      const bad = yield* (yield* gateway.client(mailer.accountKey)).limits.get({ urlParams: {} })
      assert.deepStrictEqual([good.enough_data, good.tier, good.limits.messages_per_day, good.limits.new_contacts_per_day], [true, "excellent", 1500, 225])
      assert.isAtLeast(good.rating, 80)
      assert.isTrue(bad.enough_data)
      assert.isBelow(bad.rating, 40)
      assert.include(["low", "critical"], bad.tier)
      assert.strictEqual(bad.limits.messages_per_day, 300)
      assert.isAtMost(bad.limits.new_contacts_per_day, 30)
    }))

  it.scopedLive("a group's chatter moves neither the trust index nor whether it has enough data", () =>
    Effect.gen(function*() {
      const time = ManualClock.make(NOON)
      const gateway = yield* startGateway(yield* freshDatabase, { domainClock: time.clock })
      const acme = yield* provision(gateway.ops, { numbers: 2 })
      const [quiet, inGroups] = acme.numbers
      time.adjust("20 days")
      const at = new Date(time.now() - 3 * 86_400_000)
      // Twins: ten messages each to people who never answered; one also sits in busy groups.
      for (const n of [quiet, inGroups]) {
        yield* seedMessages(gateway.database, acme.accountId, Array.from({ length: 10 }, () => ({
          numberId: n.id, peer: uniquePhone(), direction: "out" as const, createdAt: at
        })))
      }
      yield* seedMessages(gateway.database, acme.accountId, Array.from({ length: 40 }, (_, i) => ({
        numberId: inGroups.id, peer: uniquePhone(), direction: "in" as const, group: true, text: `chat ${i}`, createdAt: at
      })))
      // The index is recomputed at most every 5 minutes.
      time.adjust("6 minutes")
      const api = yield* gateway.client(acme.accountKey)
      const [a, b] = yield* Effect.forEach([quiet, inGroups], (n) => api.limits.get({ urlParams: { from: String(n.id) } }))
      assert.deepStrictEqual([b.rating, b.enough_data, b.tier], [a.rating, a.enough_data, a.tier])
      assert.isFalse(b.enough_data)
    }))
})

describe("POST /contacts/check", () => {
  it.scopedLive("{phone, exists, chat_id} with the day's checks in X-RateLimit-*; 1 a second (Retry-After 60); 200 a day", () =>
    Effect.gen(function*() {
      const time = ManualClock.make(NOON)
      const gateway = yield* startGateway(yield* freshDatabase, { domainClock: time.clock })
      const acme = yield* provision(gateway.ops, { numbers: 2 })
      const absent = uniquePhone()
      yield* gateway.sim.setPhone(absent, false)
      const present = uniquePhone()
      const from = acme.numbers[0].id
      const yes = yield* post(gateway, "/api/v1/contacts/check", acme.accountKey, { phone: `+${present}`, from })
      assert.deepStrictEqual([yes.status, yes.body], [200, { phone: present, exists: true, chat_id: `${present}@c.us` }])
      assert.deepStrictEqual(
        [yes.headers["x-ratelimit-limit"], yes.headers["x-ratelimit-remaining"], yes.headers["x-ratelimit-reset"]],
        ["200", "199", String(Almaty.nextMidnight(NOON) / 1000)]
      )
      const fast = yield* post(gateway, "/api/v1/contacts/check", acme.accountKey, { phone: absent, from })
      // Retry-After 60 on every endpoint but the send (the spec); the sentence says the real wait.
      assert.deepStrictEqual(
        [code(fast), fast.headers["retry-after"], fast.headers["x-ratelimit-remaining"], fast.body.error],
        ["429 rate_limited", "60", "199", "One contact check a second per number; the next is allowed in 1 s"]
      )
      time.adjust("1 second")
      const no = yield* post(gateway, "/api/v1/contacts/check", acme.accountKey, { phone: absent, from })
      assert.deepStrictEqual(no.body, { phone: absent, exists: false, chat_id: `${absent}@c.us` })
      assert.strictEqual(code(yield* post(gateway, "/api/v1/contacts/check", acme.accountKey, { phone: "abc", from })), "400 invalid_param")
      assert.strictEqual(code(yield* post(gateway, "/api/v1/contacts/check", acme.accountKey, { phone: present })), "400 from_required")
      for (let i = 2; i < 200; i++) {
        time.adjust("1 second")
        assert.strictEqual((yield* post(gateway, "/api/v1/contacts/check", acme.accountKey, { phone: present, from })).status, 200)
      }
      time.adjust("1 second")
      const spent = yield* post(gateway, "/api/v1/contacts/check", acme.accountKey, { phone: present, from })
      assert.deepStrictEqual([code(spent), spent.headers["retry-after"]], ["429 daily_limit", String(Almaty.secondsToMidnight(time.now()))])
      // The other number has its own 200.
      assert.strictEqual((yield* post(gateway, "/api/v1/contacts/check", acme.accountKey, { phone: present, from: acme.numbers[1].id })).status, 200)
      const limits = yield* (yield* gateway.client(acme.accountKey)).limits.get({ urlParams: { from: String(from) } })
      assert.strictEqual(limits.used.checks, 200)
    }), { timeout: 60_000 })

  it.scopedLive("the one-a-second rule holds across a restart, like the day's count", () =>
    Effect.gen(function*() {
      const database = yield* freshDatabase
      const network = yield* simulatedNetwork
      const time = ManualClock.make(NOON)
      const first = yield* stoppable(startGateway(database, { sim: network, domainClock: time.clock }))
      const acme = yield* provision(first.ops)
      const check = (gateway: RunningGateway) => post(gateway, "/api/v1/contacts/check", acme.accountKey, { phone: uniquePhone() })
      assert.strictEqual(code(yield* check(first)), "200 ok")
      yield* first.stop

      const second = yield* startGateway(database, { sim: network, domainClock: time.clock })
      yield* linked(second.ops, acme.numbers[0].id)
      time.adjust("500 millis")
      const fast = yield* check(second)
      // Retry-After 60 on every endpoint but the send (the spec); the sentence says the real wait.
      assert.deepStrictEqual(
        [code(fast), fast.headers["retry-after"], fast.headers["x-ratelimit-remaining"], fast.body.error],
        ["429 rate_limited", "60", "199", "One contact check a second per number; the next is allowed in 1 s"]
      )
      time.adjust("500 millis")
      const next = yield* check(second)
      assert.deepStrictEqual([code(next), next.headers["x-ratelimit-remaining"]], ["200 ok", "198"])
    }))

  it.scopedLive("402 number_paused and 409 not_connected", () =>
    Effect.gen(function*() {
      const gateway = yield* startGateway(yield* freshDatabase)
      const acme = yield* provision(gateway.ops, { numbers: 2 })
      const [n1, n2] = acme.numbers
      yield* gateway.ops.ops.pause({ path: { id: n1.id }, payload: { paused: true } })
      assert.strictEqual(code(yield* post(gateway, "/api/v1/contacts/check", acme.accountKey, { phone: uniquePhone(), from: n1.id })), "402 number_paused")
      yield* gateway.sim.disconnect(n2.phone, "logged_out")
      yield* linked(gateway.ops, n2.id, "STOPPED")
      assert.strictEqual(code(yield* post(gateway, "/api/v1/contacts/check", acme.accountKey, { phone: uniquePhone(), from: n2.id })), "409 not_connected")
    }))
})

describe("incoming messages, acks and their webhook events", () => {
  it.scopedLive("flow through the entity into messages, chats, contacts and the outbox", () =>
    Effect.gen(function*() {
      const gateway = yield* startGateway(yield* freshDatabase, { settings: { webhookAllowPrivateUrls: true } })
      yield* gateway.sim.updateConfig({ deliveredDelayMs: 20, readDelayMs: 60 })
      const acme = yield* provision(gateway.ops)
      const number = acme.numbers[0]
      const api = yield* gateway.client(acme.accountKey)
      // A port nothing listens on: the events stay in the outbox, where this test reads them.
      yield* api.webhooks.set({ payload: { url: "http://127.0.0.1:1/hook" } })
      const peer = uniquePhone()
      yield* gateway.sim.inbound({ to: number.phone, from: peer, name: "Aigerim", text: "Is the blue one in stock?" })
      const [incoming] = (yield* eventually(api.messages.list({ urlParams: { chat: peer } }), (p) => p.messages.length === 1)).messages
      assert.deepStrictEqual(
        [incoming.direction, incoming.source, incoming.status, incoming.name, incoming.text, incoming.peer],
        ["in", "network", "received", "Aigerim", "Is the blue one in stock?", peer]
      )
      const { chats } = yield* api.chats.list({ urlParams: {} })
      assert.deepStrictEqual([chats[0].chat_id, chats[0].name, chats[0].incoming_count], [`${peer}@c.us`, "Aigerim", 1])

      const sent = yield* api.messages.send({ payload: { to: peer, text: "Yes, it is" } })
      yield* eventually(api.messages.get({ path: { id: sent.id } }), (m) => m.status === "read")
      // Replying to someone who wrote first is not a new contact.
      assert.strictEqual((yield* api.limits.get({ urlParams: {} })).used.new_contacts, 0)

      const events = yield* eventually(
        sql(gateway.database, (sql) =>
          sql<{ event: string; payload: any }>`SELECT event, payload FROM webhook_outbox WHERE account_id = ${acme.accountId} ORDER BY id`),
        (rows) => rows.filter((r) => r.event === "message.ack").length >= 3
      )
      const message = events.find((e) => e.event === "message")!.payload
      assert.strictEqual(message.event, "message")
      assert.isNumber(message.timestamp)
      assert.deepStrictEqual(
        { id: message.data.id, from: message.data.from, name: message.data.name, text: message.data.text, hasMedia: message.data.hasMedia },
        { id: incoming.wa_message_id, from: peer, name: "Aigerim", text: "Is the blue one in stock?", hasMedia: false }
      )
      const acks = events.filter((e) => e.event === "message.ack").map((e) => e.payload.data)
      assert.deepStrictEqual(acks.map((a) => [a.id, a.to, a.ack]), [
        [sent.wa_message_id, peer, "sent"],
        [sent.wa_message_id, peer, "delivered"],
        [sent.wa_message_id, peer, "read"]
      ])
      const contact = yield* sql(gateway.database, (sql) =>
        sql<{ wrote_first: boolean }>`SELECT wrote_first FROM contacts WHERE number_id = ${number.id} AND phone = ${peer}`)
      assert.isTrue(contact[0].wrote_first)

      // A lost connection is a session.status event, and so is its return.
      yield* gateway.sim.disconnect(number.phone, "connection_lost")
      const statuses = yield* eventually(
        sql(gateway.database, (sql) =>
          sql<{ payload: any }>`SELECT payload FROM webhook_outbox WHERE account_id = ${acme.accountId} AND event = 'session.status' ORDER BY id`),
        (rows) => rows.some((r) => r.payload.data.status === "disconnected") && rows.at(-1)?.payload.data.status === "connected"
      )
      assert.include(statuses.map((s) => s.payload.data.status), "disconnected")
    }))

  it.scopedLive("a message that failed after being sent becomes failed, with its ack event", () =>
    Effect.gen(function*() {
      const gateway = yield* startGateway(yield* freshDatabase)
      yield* gateway.sim.updateConfig({ deliveredDelayMs: 20 })
      const acme = yield* provision(gateway.ops)
      const to = uniquePhone()
      yield* gateway.sim.failures(to, { mode: "fail" })
      const api = yield* gateway.client(acme.accountKey)
      const sent = yield* api.messages.send({ payload: { to, text: "hello" } })
      const failed = yield* eventually(api.messages.get({ path: { id: sent.id } }), (m) => m.status === "failed")
      assert.isString(failed.error)
    }))
})

describe("linking and connection status", () => {
  it.scopedLive("by QR: STARTING -> SCAN_QR_CODE -> WORKING, seen by the operator and GET /numbers/{id}/connection", () =>
    Effect.gen(function*() {
      const gateway = yield* startGateway(yield* freshDatabase)
      yield* gateway.sim.updateConfig({ autoScan: false })
      const acme = yield* provision(gateway.ops, { numbers: 0 })
      const phone = uniquePhone()
      const added = yield* gateway.ops.ops.addNumber({ path: { id: acme.accountId }, payload: { phone } })
      assert.strictEqual(added.link.status, "SCAN_QR_CODE")
      assert.isString(added.link.qr)
      assert.match(added.link.qr_image ?? "", /^data:image\/png;base64,iVBORw0KGgo/)
      const waiting = yield* linked(gateway.ops, added.number.id, "SCAN_QR_CODE")
      assert.isString(waiting.qr)
      const api = yield* gateway.client(acme.accountKey)
      assert.strictEqual((yield* api.numbers.connection({ path: { id: added.number.id } })).status, "SCAN_QR_CODE")
      assert.strictEqual(code(yield* post(gateway, "/api/v1/messages/send", acme.accountKey, { to: uniquePhone(), text: "x" })), "409 not_connected")
      yield* gateway.sim.scan(phone)
      yield* linked(gateway.ops, added.number.id, "WORKING")
      const connection = yield* api.numbers.connection({ path: { id: added.number.id } })
      assert.deepStrictEqual([connection.status, connection.phone], ["WORKING", phone])
    }))

  it.scopedLive("by pairing code: the 8-character code, then WORKING once it is entered on the phone", () =>
    Effect.gen(function*() {
      const gateway = yield* startGateway(yield* freshDatabase)
      yield* gateway.sim.updateConfig({ autoScan: false })
      const acme = yield* provision(gateway.ops, { numbers: 0 })
      const phone = uniquePhone()
      const added = yield* gateway.ops.ops.addNumber({ path: { id: acme.accountId }, payload: { phone, method: "code" } })
      const waiting = yield* linked(gateway.ops, added.number.id, "SCAN_QR_CODE")
      assert.match(waiting.pairing_code ?? "", /^[A-Z0-9]{4}-?[A-Z0-9]{4}$/)
      yield* gateway.sim.pair(phone, waiting.pairing_code!)
      yield* linked(gateway.ops, added.number.id, "WORKING")
    }))

  it.scopedLive("link and relink answer with this attempt's QR or code, from STOPPED, FAILED and WORKING", () =>
    Effect.gen(function*() {
      const gateway = yield* startGateway(yield* freshDatabase)
      const acme = yield* provision(gateway.ops)
      const { id, phone } = acme.numbers[0]
      yield* gateway.sim.updateConfig({ autoScan: false })
      const path = { id }
      const shown = (link: { status: string; qr: string | null; pairing_code: string | null }) =>
        [link.status, link.qr !== null, link.pairing_code !== null]

      // After an unlink the number rests in STOPPED: a link answers with the code or QR it starts.
      assert.strictEqual((yield* gateway.ops.ops.unlink({ path })).status, "STOPPED")
      const byCode = yield* gateway.ops.ops.link({ path, payload: { method: "code" } })
      assert.deepStrictEqual(shown(byCode), ["SCAN_QR_CODE", false, true])
      assert.match(byCode.pairing_code!, /^[A-Z0-9]{4}-?[A-Z0-9]{4}$/)
      yield* gateway.ops.ops.unlink({ path })
      assert.deepStrictEqual(shown(yield* gateway.ops.ops.link({ path, payload: { method: "qr" } })), ["SCAN_QR_CODE", true, false])

      // From FAILED (nobody scanned): a new QR.
      yield* gateway.sim.updateConfig({ qrRefreshMs: 20 })
      yield* gateway.ops.ops.link({ path, payload: { method: "qr" } })
      yield* linked(gateway.ops, id, "FAILED")
      yield* gateway.sim.updateConfig({ qrRefreshMs: 20_000 })
      assert.deepStrictEqual(shown(yield* gateway.ops.ops.link({ path, payload: {} })), ["SCAN_QR_CODE", true, false])

      // Relink from WORKING and from STOPPED: a new device's QR or code.
      yield* gateway.sim.scan(phone)
      yield* linked(gateway.ops, id, "WORKING")
      assert.deepStrictEqual(shown(yield* gateway.ops.ops.relink({ path, payload: {} })), ["SCAN_QR_CODE", true, false])
      yield* gateway.ops.ops.unlink({ path })
      assert.deepStrictEqual(shown(yield* gateway.ops.ops.relink({ path, payload: { method: "code" } })), ["SCAN_QR_CODE", false, true])
      yield* gateway.ops.ops.unlink({ path })
      assert.deepStrictEqual(shown(yield* gateway.ops.ops.relink({ path, payload: { method: "qr" } })), ["SCAN_QR_CODE", true, false])
      yield* gateway.sim.scan(phone)
      yield* linked(gateway.ops, id, "WORKING")
    }), 60_000)

  it.scopedLive("the operator's link and relink take no body, an empty one or null as {}: a QR", () =>
    Effect.gen(function*() {
      const gateway = yield* startGateway(yield* freshDatabase)
      const acme = yield* provision(gateway.ops)
      const { id } = acme.numbers[0]
      yield* gateway.sim.updateConfig({ autoScan: false })
      const ask = (action: "link" | "relink", body: string | undefined, contentType?: string) =>
        Effect.gen(function*() {
          const response = yield* gateway.http.execute(HttpClientRequest.post(`/ops/v1/numbers/${id}/${action}`).pipe(
            HttpClientRequest.setHeaders({ authorization: `Bearer ${OPERATOR_TOKEN}` }),
            body === undefined ? (r) => r : HttpClientRequest.bodyText(body, contentType ?? "application/json")
          ))
          return { status: response.status, body: (yield* response.json) as any }
        })
      for (const action of ["link", "relink"] as const) {
        for (const [body, contentType] of [[undefined], ["", "application/json"], ["", "text/plain"], ["null"]] as const) {
          const what = `${action} ${JSON.stringify(body)} ${contentType ?? ""}`
          yield* gateway.ops.ops.unlink({ path: { id } })
          const answer = yield* ask(action, body, contentType)
          assert.strictEqual(code(answer), "200 ok", `${what}: ${JSON.stringify(answer.body)}`)
          assert.deepStrictEqual([answer.body.status, typeof answer.body.qr, answer.body.pairing_code], ["SCAN_QR_CODE", "string", null], what)
        }
        for (const body of ["[]", "\"code\""]) {
          assert.strictEqual(code(yield* ask(action, body)), "400 invalid_json", `${action} ${body}`)
        }
        assert.strictEqual(code(yield* ask(action, "{\"method\": \"sms\"}")), "400 invalid_param", action)
        assert.strictEqual(code(yield* ask(action, "{")), "400 invalid_json", action)
      }
    }), 60_000)

  it.scopedLive("the cabinet's link after its unlink answers with the new pairing code", () =>
    Effect.gen(function*() {
      const box = yield* mailbox
      const gateway = yield* startGateway(yield* freshDatabase, { settings: cabinetSettings(box) })
      const owner = yield* signedUp(gateway.url, box, "owner@shop.kz")
      yield* owner.post("/balance/top-up", { amount: 9900 })
      const added = yield* owner.post("/numbers", { phone: uniquePhone(), method: "qr" })
      const id = added.body.number.id
      yield* linked(gateway.ops, id, "WORKING")
      yield* gateway.sim.updateConfig({ autoScan: false })
      assert.strictEqual((yield* owner.post(`/numbers/${id}/unlink`)).body.status, "STOPPED")
      const link = (yield* owner.post(`/numbers/${id}/link`, { method: "code" })).body
      assert.deepStrictEqual([link.status, typeof link.pairing_code], ["SCAN_QR_CODE", "string"], JSON.stringify(link))
    }), 60_000)

  it.scopedLive("the CLI's link --watch and relink --watch show the code or QR and follow it to WORKING", () =>
    Effect.gen(function*() {
      const gateway = yield* startGateway(yield* freshDatabase)
      const acme = yield* provision(gateway.ops)
      const { id } = acme.numbers[0]
      // The simulated phone scans by itself a few seconds later, after the CLI has shown the code.
      yield* gateway.sim.updateConfig({ scanDelayMs: 3_000 })
      const cli = (...args: Array<string>) =>
        Effect.async<{ exit: number; lines: Array<any>; stderr: string }>((resume) => {
          execFile(
            process.execPath,
            ["--import", "tsx", join(import.meta.dirname, "../../apps/gateway/src/cli.ts"), ...args],
            { env: { ...process.env, WAGATE_URL: gateway.url, OPERATOR_TOKEN } },
            (error, stdout, stderr) =>
              resume(Effect.succeed({
                exit: error === null ? 0 : Number(error.code),
                lines: stdout.trim().split("\n").map((l) => JSON.parse(l)),
                stderr
              }))
          )
        })
      yield* gateway.ops.ops.unlink({ path: { id } })
      const link = yield* cli("number", "link", "--number", String(id), "--method", "code", "--watch")
      assert.strictEqual(link.exit, 0, JSON.stringify(link))
      assert.match(link.lines[0].pairing_code ?? "", /^[A-Z0-9]{8}$/, JSON.stringify(link.lines))
      assert.strictEqual(link.lines.at(-1).status, "WORKING")

      const relink = yield* cli("number", "relink", "--number", String(id), "--watch")
      assert.strictEqual(relink.exit, 0, JSON.stringify(relink))
      assert.strictEqual(relink.lines[0].status, "SCAN_QR_CODE", JSON.stringify(relink.lines))
      assert.isString(relink.lines[0].qr)
      assert.include(relink.stderr, "\u2588")
      assert.strictEqual(relink.lines.at(-1).status, "WORKING")
    }), 120_000)
})

describe("restart", () => {
  const settings = { webhookAllowPrivateUrls: true }
  /**
   * A first gateway on a fresh database and simulated network, in a scope the test closes to stop
   * it, and an account with `numbers` linked numbers whose webhook goes to a port nothing listens
   * on: the events stay in the outbox, where the test reads them.
   */
  const firstRunner = (numbers: number) =>
    Effect.gen(function*() {
      const database = yield* freshDatabase
      const network = yield* simulatedNetwork
      const first = yield* stoppable(startGateway(database, { sim: network, settings }))
      const acme = yield* provision(first.ops, { numbers })
      yield* (yield* first.client(acme.accountKey)).webhooks.set({ payload: { url: "http://127.0.0.1:1/hook" } })
      return { acme, database, first, network }
    })

  it.scopedLive("a number that comes back WORKING on another runner is no news: no status write, no session.status event", () =>
    Effect.gen(function*() {
      const { acme, database, first, network } = yield* firstRunner(1)
      const number = acme.numbers[0]
      const statusEvents = sql(database, (sql) =>
        sql<{ payload: any }>`SELECT payload FROM webhook_outbox WHERE account_id = ${acme.accountId} AND event = 'session.status' ORDER BY id`)
      const before = yield* statusEvents
      yield* first.stop

      const second = yield* startGateway(database, { sim: network, settings })
      // The send waits for the number to reconnect, which is persisted (if at all) before it is seen.
      assert.strictEqual(code(yield* post(second, "/api/v1/messages/send", acme.accountKey, { to: uniquePhone(), text: "back" })), "200 ok")
      assert.deepStrictEqual((yield* statusEvents).map((e) => e.payload.data.status), before.map((e) => e.payload.data.status))
      const [row] = yield* sql(database, (sql) => sql<{ status: string }>`SELECT status FROM numbers WHERE id = ${number.id}`)
      assert.strictEqual(row.status, "WORKING")

      // A connection really lost and back is news again.
      yield* second.sim.disconnect(number.phone, "connection_lost")
      yield* eventually(statusEvents, (rows) => rows.length === before.length + 2 && rows.at(-1)?.payload.data.status === "connected")
    }), { timeout: 60_000 })

  it.scopedLive("a link in progress goes on on the runner that takes the number, the same way; a number logged out meanwhile ends STOPPED", () =>
    Effect.gen(function*() {
      const { acme, database, first, network } = yield* firstRunner(2)
      yield* first.sim.updateConfig({ autoScan: false })
      // Relinked by QR (logged out first, as a relink does), and a new number linked by pairing code.
      const [relinked, loggedOut] = acme.numbers
      assert.strictEqual((yield* first.ops.ops.relink({ path: { id: relinked.id }, payload: {} })).status, "SCAN_QR_CODE")
      const phone = uniquePhone()
      const added = yield* first.ops.ops.addNumber({ path: { id: acme.accountId }, payload: { phone, method: "code" } })
      const oldCode = (yield* linked(first.ops, added.number.id, "SCAN_QR_CODE")).pairing_code
      assert.isString(oldCode)
      const statusEvents = sql(database, (sql) =>
        sql<{ payload: any }>`SELECT payload FROM webhook_outbox WHERE account_id = ${acme.accountId} AND event = 'session.status' ORDER BY id`)
      const before = (yield* statusEvents).length
      yield* first.stop
      // While no runner holds it, the phone of a linked number logs it out.
      yield* first.sim.disconnect(loggedOut.phone, "logged_out")

      const second = yield* startGateway(database, { sim: network, settings })
      const byQr = yield* eventually(second.ops.ops.linkStatus({ path: { id: relinked.id } }), (l) => l.qr !== null, 20_000)
      assert.deepStrictEqual([byQr.status, byQr.pairing_code], ["SCAN_QR_CODE", null])
      const byCode = yield* eventually(second.ops.ops.linkStatus({ path: { id: added.number.id } }), (l) => l.pairing_code !== null && l.pairing_code !== oldCode, 20_000)
      assert.deepStrictEqual([byCode.status, byCode.qr], ["SCAN_QR_CODE", null])
      yield* second.sim.scan(relinked.phone)
      yield* second.sim.pair(phone, byCode.pairing_code!)
      yield* linked(second.ops, relinked.id, "WORKING")
      yield* linked(second.ops, added.number.id, "WORKING")
      // Really logged out: STOPPED, and said so.
      const stopped = yield* linked(second.ops, loggedOut.id, "STOPPED")
      assert.strictEqual(stopped.reason, "logged out")

      const events = (yield* statusEvents).slice(before).map((e) => e.payload.data)
      const of = (id: number) => events.filter((e) => e.number_id === id).map((e) => `${e.status}${e.reason ? ` ${e.reason}` : ""}`)
      assert.deepStrictEqual(of(loggedOut.id), ["stopped logged out"])
      for (const id of [relinked.id, added.number.id]) {
        assert.deepStrictEqual(of(id).filter((s) => !["starting", "scan_qr_code"].includes(s)), ["connected"], JSON.stringify(of(id)))
      }
      const rows = yield* sql(database, (sql) =>
        sql<{ id: number; status: string; linked: boolean }>`SELECT id::int, status, linked FROM numbers WHERE account_id = ${acme.accountId} ORDER BY id`)
      assert.deepStrictEqual(rows.map((r) => [r.status, r.linked]), [["WORKING", true], ["STOPPED", false], ["WORKING", true]])
    }), { timeout: 60_000 })

  it.scopedLive("counters, windows and a suspension hold after the runner stops and another starts", () =>
    Effect.gen(function*() {
      const database = yield* freshDatabase
      const network = yield* simulatedNetwork
      const time = ManualClock.make(NOON)
      const first = yield* stoppable(startGateway(database, { sim: network, domainClock: time.clock }))
      const acme = yield* provision(first.ops)
      time.adjust("4 days")
      for (let i = 0; i < 24; i++) {
        assert.strictEqual((yield* post(first, "/api/v1/messages/send", acme.accountKey, { to: uniquePhone(), text: "SALE" })).status, 200)
        time.adjust("5 seconds")
      }
      assert.strictEqual(code(yield* post(first, "/api/v1/messages/send", acme.accountKey, { to: uniquePhone(), text: "SALE" })), "429 spam_detected")
      // A customer writes; the reply goes out just before the runner stops.
      const peer = uniquePhone()
      yield* first.sim.inbound({ to: acme.numbers[0].phone, from: peer, text: "hi?" })
      yield* eventually((yield* first.client(acme.accountKey)).messages.list({ urlParams: { chat: peer } }), (p) => p.messages.length === 1)
      time.adjust("5 seconds")
      assert.strictEqual(code(yield* post(first, "/api/v1/messages/send", acme.accountKey, { to: peer, text: "hello" })), "200 ok")
      const before = yield* (yield* first.client(acme.accountKey)).limits.get({ urlParams: {} })
      yield* first.stop

      const second = yield* startGateway(database, { sim: network, domainClock: time.clock })
      // Within the same second as the last send: still too fast.
      assert.strictEqual(code(yield* post(second, "/api/v1/messages/send", acme.accountKey, { to: peer, text: "again" })), "429 rate_limited")
      const after = yield* (yield* second.client(acme.accountKey)).limits.get({ urlParams: {} })
      assert.deepStrictEqual(after.used, before.used)
      assert.deepStrictEqual(after.used, { messages: 25, new_contacts: 24, checks: 0 })
      assert.strictEqual(after.cold_blocked_until, before.cold_blocked_until)
      assert.isNotNull(after.cold_blocked_until)
      time.adjust("5 seconds")
      assert.strictEqual(code(yield* post(second, "/api/v1/messages/send", acme.accountKey, { to: uniquePhone(), text: "hi" })), "429 cold_blocked")
      assert.strictEqual(code(yield* post(second, "/api/v1/messages/send", acme.accountKey, { to: peer, text: "again" })), "200 ok")
    }), { timeout: 60_000 })
})
