/**
 * The read endpoints through the typed client: every filter of GET /messages, paging, chats,
 * numbers, summary, balance, account data, and what a number key may see.
 */
import { assert, describe, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { seedFile } from "../support/Archives.js"
import { provision, seedMessages } from "../support/Fixtures.js"
import { TestGateway } from "../support/TestGateway.js"

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
const at = (s: string) => new Date(s)

/** The error code a call failed with, or "succeeded". */
const codeOf = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.map(Effect.either(effect), (result) =>
    Either.isLeft(result) ? String((result.left as any).code ?? (result.left as any)._tag) : "succeeded")

const world = Effect.gen(function*() {
  const gateway = yield* TestGateway
  const acme = yield* provision(gateway.ops, { numbers: 2, credit: 19_800 })
  const other = yield* provision(gateway.ops, { numbers: 1 })
  const [n1, n2] = acme.numbers
  const ids = yield* seedMessages(gateway.database, acme.accountId, [
    { numberId: n1.id, peer: "77770000001", direction: "in", text: "first", createdAt: at("2026-11-01T08:00:00Z") },
    { numberId: n1.id, peer: "77770000001", direction: "out", text: "reply", createdAt: at("2026-11-01T09:00:00Z") },
    { numberId: n1.id, peer: "77770000002", direction: "out", text: "hello 2", createdAt: at("2026-11-10T10:00:00Z") },
    { numberId: n2.id, peer: "77770000001", direction: "in", text: "on n2", createdAt: at("2026-11-15T10:00:00Z") },
    { numberId: n2.id, peer: "77770000003", direction: "out", text: "late", createdAt: at("2026-11-20T20:00:00Z") }
  ])
  const otherIds = yield* seedMessages(gateway.database, other.accountId, [
    { numberId: other.numbers[0].id, peer: "77770000001", direction: "in", createdAt: at("2026-11-12T10:00:00Z") }
  ])
  return { gateway, acme, other, ids, otherIds, n1, n2 }
})

layer(TestGateway.layer(), { excludeTestServices: true })("read endpoints", (it) => {
  it.effect("GET /messages: newest first, ISO timestamps with milliseconds, spec fields", () =>
    Effect.gen(function*() {
      const { acme, gateway, ids, n1 } = yield* world
      const api = yield* gateway.client(acme.accountKey)
      const page = yield* api.messages.list({ urlParams: {} })
      assert.deepStrictEqual(page.messages.map((m) => m.id), [...ids].reverse())
      assert.strictEqual(page.next_before, null)
      const oldest = page.messages[4]
      assert.strictEqual(oldest.from, n1.id)
      assert.strictEqual(oldest.direction, "in")
      assert.strictEqual(oldest.source, "network")
      assert.strictEqual(oldest.chat_id, "77770000001@c.us")
      assert.strictEqual(oldest.peer, "77770000001")
      assert.strictEqual(oldest.text, "first")
      assert.strictEqual(oldest.created_at, "2026-11-01T08:00:00.000Z")
      assert.match(oldest.updated_at, ISO_MS)
      assert.strictEqual(oldest.media, null)
      assert.strictEqual(oldest.media_pending, false)
    }))

  it.effect("GET /messages: from as id or phone, chat as phone or chat_id, direction", () =>
    Effect.gen(function*() {
      const { acme, gateway, ids, n1, n2 } = yield* world
      const api = yield* gateway.client(acme.accountKey)
      const list = (urlParams: Parameters<typeof api.messages.list>[0]["urlParams"]) =>
        Effect.map(api.messages.list({ urlParams }), (p) => p.messages.map((m) => m.id))
      assert.deepStrictEqual(yield* list({ from: String(n1.id) }), [ids[2], ids[1], ids[0]])
      assert.deepStrictEqual(yield* list({ from: n2.phone }), [ids[4], ids[3]])
      assert.deepStrictEqual(yield* list({ from: `+${n2.phone}` }), [ids[4], ids[3]])
      assert.deepStrictEqual(yield* list({ chat: "77770000001" }), [ids[3], ids[1], ids[0]])
      assert.deepStrictEqual(yield* list({ chat: "77770000001@c.us", from: String(n1.id) }), [ids[1], ids[0]])
      assert.deepStrictEqual(yield* list({ direction: "out" }), [ids[4], ids[2], ids[1]])
      assert.deepStrictEqual(yield* list({ direction: "in", from: String(n1.id) }), [ids[0]])
    }))

  it.effect("GET /messages, /chats: a from with a leading zero is no number id but a phone, and no valid one: invalid_from", () =>
    Effect.gen(function*() {
      const { acme, gateway, ids, n1, n2 } = yield* world
      const answer = (path: string, from: string) =>
        Effect.flatMap(
          gateway.http.get(path, { urlParams: { from }, headers: { authorization: `Bearer ${acme.accountKey}` } }),
          (r) => Effect.map(r.json, (body: any) => ({ status: r.status, body }))
        )
      for (const from of [`0${n1.id}`, `00${n1.id}`, ` 0${n1.id} `, `+0${n1.id}`]) {
        for (const path of ["/api/v1/messages", "/api/v1/chats"]) {
          const refused = yield* answer(path, from)
          assert.deepStrictEqual([refused.status, refused.body.code], [400, "invalid_from"], `${path} from=${from}`)
        }
      }
      // Written without one, the id names its number; a phone names its own.
      const byId = yield* answer("/api/v1/messages", String(n1.id))
      assert.deepStrictEqual(byId.body.messages.map((m: any) => m.id), [ids[2], ids[1], ids[0]])
      const byPhone = yield* answer("/api/v1/chats", n2.phone)
      assert.deepStrictEqual(byPhone.body.chats.map((c: any) => c.from), [n2.id, n2.id])
    }))

  it.effect("GET /messages: since and until as date (Almaty), ISO time or unix seconds", () =>
    Effect.gen(function*() {
      const { acme, gateway, ids } = yield* world
      const api = yield* gateway.client(acme.accountKey)
      const list = (urlParams: { since?: string; until?: string }) =>
        Effect.map(api.messages.list({ urlParams }), (p) => p.messages.map((m) => m.id))
      // 2026-11-21 in Almaty starts at 2026-11-20T19:00Z: the 20:00Z message is on the 21st there.
      assert.deepStrictEqual(yield* list({ since: "2026-11-21" }), [ids[4]])
      assert.deepStrictEqual(yield* list({ until: "2026-11-01T09:00:00Z" }), [ids[0]])
      assert.deepStrictEqual(yield* list({ since: "2026-11-01T09:00:00.000Z", until: "2026-11-15" }), [ids[2], ids[1]])
      const unix = String(Date.parse("2026-11-10T10:00:00Z") / 1000)
      assert.deepStrictEqual(yield* list({ since: unix }), [ids[4], ids[3], ids[2]])
      // An offset as ISO 8601 writes it, also with its + left unencoded in the query (form
      // encoding reads it as a space), as curl sends what was typed.
      const raw = (query: string) =>
        Effect.flatMap(
          gateway.http.get(`/api/v1/messages?${query}`, { headers: { authorization: `Bearer ${acme.accountKey}` } }),
          (r) => Effect.map(r.json, (body: any) => body.messages.map((m: { id: number }) => m.id))
        )
      for (const since of ["2026-11-10T15:00:00%2B05:00", "2026-11-10T15:00:00+05:00", "2026-11-10T15:00:00+0500", "2026-11-10T15:00:00+05"]) {
        assert.deepStrictEqual(yield* raw(`since=${since}`), [ids[4], ids[3], ids[2]], since)
      }
      assert.deepStrictEqual(yield* raw("since=2026-11-10T15:00:01+05:00"), [ids[4], ids[3]])
    }))

  it.effect("GET /messages: keyset pages with limit, before and next_before", () =>
    Effect.gen(function*() {
      const { acme, gateway, ids } = yield* world
      const api = yield* gateway.client(acme.accountKey)
      const first = yield* api.messages.list({ urlParams: { limit: 2 } })
      assert.deepStrictEqual(first.messages.map((m) => m.id), [ids[4], ids[3]])
      assert.strictEqual(first.next_before, ids[3])
      const second = yield* api.messages.list({ urlParams: { limit: 2, before: first.next_before! } })
      assert.deepStrictEqual(second.messages.map((m) => m.id), [ids[2], ids[1]])
      const last = yield* api.messages.list({ urlParams: { limit: 2, before: second.next_before! } })
      assert.deepStrictEqual(last.messages.map((m) => m.id), [ids[0]])
      assert.strictEqual(last.next_before, null)
    }))

  it.effect("GET /messages: bad parameters answer invalid_param / invalid_from, unknown numbers number_not_found", () =>
    Effect.gen(function*() {
      const { acme, gateway, other } = yield* world
      const api = yield* gateway.client(acme.accountKey)
      const code = (urlParams: Record<string, string>) =>
        Effect.flatMap(gateway.http.get("/api/v1/messages", { urlParams, headers: { authorization: `Bearer ${acme.accountKey}` } }), (r) =>
          Effect.map(r.json, (body: any) => `${r.status} ${body.code}`))
      assert.strictEqual(yield* code({ limit: "0" }), "400 invalid_param")
      assert.strictEqual(yield* code({ limit: "501" }), "400 invalid_param")
      assert.strictEqual(yield* code({ limit: "ten" }), "400 invalid_param")
      assert.strictEqual(yield* code({ before: "x" }), "400 invalid_param")
      assert.strictEqual(yield* code({ direction: "sideways" }), "400 invalid_param")
      assert.strictEqual(yield* code({ since: "last week" }), "400 invalid_param")
      assert.strictEqual(yield* code({ since: "2026-11-20", until: "2026-11-01" }), "400 invalid_param")
      assert.strictEqual(yield* code({ chat: "not a chat" }), "400 invalid_param")
      assert.strictEqual(yield* code({ from: "abc" }), "400 invalid_from")
      assert.strictEqual(yield* code({ from: "77009999999" }), "404 number_not_found")
      // Another account's number is not this account's.
      assert.strictEqual(yield* code({ from: String(other.numbers[0].id) }), "404 number_not_found")
      assert.strictEqual(yield* code({ limit: "500" }), "200 undefined")
      assert.strictEqual(yield* codeOf(api.messages.list({ urlParams: { from: "abc" } })), "invalid_from")
    }))

  it.effect("GET /messages/{id}: the message with its status; other accounts' ids are not_found", () =>
    Effect.gen(function*() {
      const { acme, gateway, ids, otherIds } = yield* world
      const api = yield* gateway.client(acme.accountKey)
      const message = yield* api.messages.get({ path: { id: ids[2] } })
      assert.strictEqual(message.id, ids[2])
      assert.strictEqual(message.status, "sent")
      assert.strictEqual(message.text, "hello 2")
      assert.strictEqual(yield* codeOf(api.messages.get({ path: { id: otherIds[0] } })), "not_found")
      assert.strictEqual(yield* codeOf(api.messages.get({ path: { id: 999_999_999 } })), "not_found")
      const bad = yield* gateway.http.get("/api/v1/messages/abc", { headers: { "x-api-key": acme.accountKey } })
      assert.strictEqual(bad.status, 400)
      assert.deepStrictEqual(Object.keys((yield* bad.json) as object).sort(), ["code", "error"])
    }))

  it.effect("ids, limit and before are decimal digits: hex, exponents, leading zeros and signs answer 400 invalid_param", () =>
    Effect.gen(function*() {
      const { acme, gateway, ids } = yield* world
      const answer = (path: string) =>
        Effect.flatMap(gateway.http.get(path, { headers: { authorization: `Bearer ${acme.accountKey}` } }), (r) =>
          Effect.map(r.json, (body: any) => ({ code: `${r.status} ${body.code}`, error: String(body.error) })))
      const id = ids[2]
      // Each of these is the message's id to JavaScript's Number().
      for (const form of [`0x${id.toString(16)}`, `0${id}`, `${id}e0`, `${id}.0`, `+${id}`, ` ${id}`, `0b${id.toString(2)}`]) {
        const bad = yield* answer(`/api/v1/messages/${encodeURIComponent(form)}`)
        assert.strictEqual(bad.code, "400 invalid_param", form)
        assert.strictEqual(bad.error, `id: must be a whole number of at least 1 in decimal digits, not ${JSON.stringify(form)}`)
      }
      assert.strictEqual((yield* answer(`/api/v1/messages/${id}`)).code, "200 undefined")
      for (const query of ["limit=1e2", "limit=0x10", "limit=010", "limit=-1", "before=0x20", "before=1e3", "before=0", "before=9007199254740992"]) {
        assert.strictEqual((yield* answer(`/api/v1/messages?${query}`)).code, "400 invalid_param", query)
      }
      const huge = yield* answer("/api/v1/messages?before=99999999999999999999")
      assert.strictEqual(huge.error, 'before: must be a whole number of at least 1 in decimal digits, not "99999999999999999999"')
      const limit = yield* answer("/api/v1/messages?limit=0x10")
      assert.strictEqual(limit.error, 'limit: must be a whole number from 1 to 500 in decimal digits, not "0x10"')
      assert.strictEqual((yield* answer(`/api/v1/messages?limit=1&before=${id}`)).code, "200 undefined")
    }))

  it.effect("a number key sees only its own number's messages, chats and data", () =>
    Effect.gen(function*() {
      const { acme, gateway, ids, n1, n2 } = yield* world
      const api = yield* gateway.client(acme.numberKeys[1]) // key of n2
      const page = yield* api.messages.list({ urlParams: {} })
      assert.deepStrictEqual(page.messages.map((m) => m.id), [ids[4], ids[3]])
      assert.deepStrictEqual(
        (yield* api.messages.list({ urlParams: { from: String(n2.id) } })).messages.map((m) => m.id),
        [ids[4], ids[3]]
      )
      assert.strictEqual(yield* codeOf(api.messages.list({ urlParams: { from: String(n1.id) } })), "number_not_found")
      assert.strictEqual(yield* codeOf(api.messages.list({ urlParams: { from: n1.phone } })), "number_not_found")
      assert.strictEqual(yield* codeOf(api.messages.get({ path: { id: ids[0] } })), "not_found")
      assert.strictEqual((yield* api.messages.get({ path: { id: ids[3] } })).id, ids[3])
      const chats = yield* api.chats.list({ urlParams: {} })
      assert.deepStrictEqual(chats.chats.map((c) => c.from), [n2.id, n2.id])
      assert.strictEqual(yield* codeOf(api.chats.list({ urlParams: { from: String(n1.id) } })), "number_not_found")
      const numbers = yield* api.numbers.list()
      assert.deepStrictEqual(numbers.numbers.map((n) => n.id), [n2.id])
      const status = yield* api.account.status()
      assert.deepStrictEqual(status.numbers.map((n) => n.id), [n2.id])
      assert.strictEqual(status.balance, undefined)
      assert.strictEqual(yield* codeOf(api.numbers.connection({ path: { id: n1.id } })), "number_not_found")
      assert.strictEqual((yield* api.numbers.connection({ path: { id: n2.id } })).phone, n2.phone)
      assert.strictEqual(yield* codeOf(api.account.balance()), "forbidden_for_number_key")
      assert.strictEqual(yield* codeOf(api.account.me()), "forbidden_for_number_key")
      assert.strictEqual(yield* codeOf(api.storage.get()), "forbidden_for_number_key")
    }))

  it.effect("GET /chats: counterpart, last message and counters, most recent first", () =>
    Effect.gen(function*() {
      const { acme, gateway, ids, n1 } = yield* world
      const api = yield* gateway.client(acme.accountKey)
      const { chats } = yield* api.chats.list({ urlParams: {} })
      assert.deepStrictEqual(chats.map((c) => [c.from, c.chat_id]), [
        [acme.numbers[1].id, "77770000003@c.us"],
        [acme.numbers[1].id, "77770000001@c.us"],
        [n1.id, "77770000002@c.us"],
        [n1.id, "77770000001@c.us"]
      ])
      const chat = chats[3]
      assert.strictEqual(chat.peer, "77770000001")
      assert.strictEqual(chat.message_count, 2)
      assert.strictEqual(chat.incoming_count, 1)
      assert.strictEqual(chat.outgoing_count, 1)
      assert.strictEqual(chat.last_message?.id, ids[1])
      assert.strictEqual(chat.last_message?.text, "reply")
      assert.strictEqual(chat.last_message_at, "2026-11-01T09:00:00.000Z")
      const limited = yield* api.chats.list({ urlParams: { limit: 1, from: String(n1.id) } })
      assert.deepStrictEqual(limited.chats.map((c) => c.chat_id), ["77770000002@c.us"])
    }))

  it.effect("GET /numbers, /status, /balance, /me for an account key", () =>
    Effect.gen(function*() {
      const { acme, gateway, n1, n2 } = yield* world
      const api = yield* gateway.client(acme.accountKey, "x-api-key")
      const numbers = yield* api.numbers.list()
      assert.deepStrictEqual(numbers.numbers.map((n) => [n.id, n.phone, n.status, n.paused]), [
        [n1.id, n1.phone, "WORKING", false],
        [n2.id, n2.phone, "WORKING", false]
      ])
      assert.strictEqual(numbers.limit, 10)
      // 19 800 KZT for two numbers at 330 KZT a day each: today is drawn (660), 29 days more.
      const balance = yield* api.account.balance()
      assert.deepStrictEqual(balance, {
        balance: 19_140,
        daily_charge: 660,
        days_left: 29,
        active_numbers: 2,
        paused_numbers: 0
      })
      const status = yield* api.account.status()
      assert.strictEqual(status.numbers.length, 2)
      assert.deepStrictEqual(status.balance, balance)
      const me = yield* api.account.me()
      assert.strictEqual(me.id, acme.accountId)
      assert.strictEqual(me.company, "Test LLP")
      assert.strictEqual(me.wa_status, "WORKING")
      assert.strictEqual(me.wa_phone, n1.phone)
      assert.strictEqual(me.numbers, 2)
      assert.match(me.paid_until!, ISO_MS)
      assert.strictEqual(numbers.numbers[0].paid_until, me.paid_until)
      const connection = yield* api.numbers.connection({ path: { id: n1.id } })
      assert.deepStrictEqual(connection, { status: "WORKING", phone: n1.phone, paid_until: me.paid_until })
    }))
})

describe("retention", () => {
  layer(TestGateway.layer({ settings: { messageRetentionDays: 30 } }), { excludeTestServices: true })((it) => {
    it.effect("messages older than the retention period are not returned", () =>
      Effect.gen(function*() {
        const gateway = yield* TestGateway
        const acme = yield* provision(gateway.ops)
        const now = Date.now()
        const [old, recent] = yield* seedMessages(gateway.database, acme.accountId, [
          { numberId: acme.numbers[0].id, peer: "77770000001", direction: "in", createdAt: new Date(now - 40 * 86_400_000) },
          { numberId: acme.numbers[0].id, peer: "77770000001", direction: "in", createdAt: new Date(now - 20 * 86_400_000) }
        ])
        const api = yield* gateway.client(acme.accountKey)
        assert.deepStrictEqual((yield* api.messages.list({ urlParams: {} })).messages.map((m) => m.id), [recent])
        assert.strictEqual(yield* codeOf(api.messages.get({ path: { id: old } })), "not_found")
      }))

    it.effect("nor shown as a chat's last message, nor their files served", () =>
      Effect.gen(function*() {
        const gateway = yield* TestGateway
        const acme = yield* provision(gateway.ops)
        const numberId = acme.numbers[0].id
        const now = Date.now()
        const [, recent] = yield* seedMessages(gateway.database, acme.accountId, [
          { numberId, peer: "77770000011", direction: "in", text: "long ago", createdAt: new Date(now - 40 * 86_400_000) },
          { numberId, peer: "77770000012", direction: "in", text: "lately", createdAt: new Date(now - 20 * 86_400_000) }
        ])
        const file = (peer: string, daysAgo: number) =>
          seedFile(gateway.database, gateway.blobs, {
            accountId: acme.accountId, numberId, peer, filename: `${daysAgo}.pdf`, bytes: new Uint8Array(10),
            createdAt: new Date(now - daysAgo * 86_400_000)
          })
        const oldFile = yield* file("77770000013", 40)
        const recentFile = yield* file("77770000014", 20)
        const api = yield* gateway.client(acme.accountKey)
        const chats = (yield* api.chats.list({ urlParams: {} })).chats
        const lastOf = (peer: string) => chats.find((c) => c.peer === peer)?.last_message?.id ?? null
        assert.deepStrictEqual(["77770000011", "77770000012"].map(lastOf), [null, recent])
        const media = (id: number) =>
          Effect.flatMap(
            gateway.http.get(`/api/v1/media/${id}`, { headers: { authorization: `Bearer ${acme.accountKey}` } }),
            (response) => Effect.map(response.text, (body) => `${response.status} ${response.status === 404 ? body : ""}`)
          )
        assert.deepStrictEqual(
          [yield* media(oldFile.messageId), yield* media(recentFile.messageId)],
          [`404 {"error":"File not found","code":"not_found"}`, "302 "]
        )
      }))
  })
})
