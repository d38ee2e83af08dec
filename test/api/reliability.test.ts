/**
 * Reliability as an API user and an operator see it: a request that fails inside a number's
 * entity fails alone, the number keeps working, and the operator's link view shows the fault; a
 * storage failure outside the entities answers by its kind (try again, a refused value, a bug);
 * an incoming message whose text, sender name or group subject holds U+0000 or a broken
 * surrogate is stored cleaned and announced by webhook with the cleaned text.
 */
import { assert, describe, it } from "@effect/vitest"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Effect from "effect/Effect"
import { provision, uniquePhone } from "../support/Fixtures.js"
import { freshDatabase, OPERATOR_TOKEN, sql, startGateway } from "../support/TestGateway.js"
import * as StorageRefusals from "../support/StorageRefusals.js"
import * as WebhookReceiver from "../support/WebhookReceiver.js"
import { call, eventually, webhookGateway } from "../support/Webhooks.js"

describe("a fault inside a number's entity", () => {
  it.scopedLive("fails that request alone; the operator's link view shows the fault; the number keeps sending", () =>
    Effect.gen(function*() {
      const gateway = yield* startGateway(yield* freshDatabase, {
        numberHooks: {
          // A bug that strikes one request inside the entity.
          onSend: ({ text }) => (text === "poison" ? Effect.die("poison request") : Effect.void),
          afterRecord: () => Effect.void
        }
      })
      const acme = yield* provision(gateway.ops)
      const number = acme.numbers[0]!
      const link = (yield* call(gateway, "GET", `/ops/v1/numbers/${number.id}/link`, OPERATOR_TOKEN)).body
      assert.strictEqual(link.fault, null)

      for (const attempt of [1, 2]) {
        const failed = yield* call(gateway, "POST", "/api/v1/messages/send", acme.numberKeys[0]!, { to: uniquePhone(), text: "poison" })
        assert.strictEqual(`${failed.status} ${failed.body.code}`, "500 internal_error", `attempt ${attempt}`)
        assert.notInclude(failed.body.error, "poison request")
      }
      const shown = yield* call(gateway, "GET", `/ops/v1/numbers/${number.id}/link`, OPERATOR_TOKEN)
      assert.strictEqual(shown.status, 200)
      assert.strictEqual(shown.body.status, "WORKING")
      assert.match(shown.body.fault.error, /poison request/)
      assert.isBelow(Math.abs(Date.parse(shown.body.fault.at) - Date.now()), 60_000)

      // The entity stayed up: the next send goes out at once.
      const sent = yield* call(gateway, "POST", "/api/v1/messages/send", acme.numberKeys[0]!, { to: uniquePhone(), text: "fine" })
      assert.strictEqual(sent.status, 200, JSON.stringify(sent.body))
      const metrics = yield* gateway.http.get("/ops/v1/metrics", { headers: { authorization: `Bearer ${OPERATOR_TOKEN}` } }).pipe(
        Effect.flatMap((r) => r.text),
        Effect.orDie
      )
      assert.match(metrics, /wagate_number_request_defects(_total)?\S* [1-9]/)
    }), { timeout: 60_000 })
})

describe("a storage failure", () => {
  it.scopedLive("answers 503 capacity with Retry-After when a retry helps, 400 for a value refused, 500 for a bug; keeps nothing; the entities stay up", () =>
    Effect.gen(function*() {
      const database = yield* freshDatabase
      const gateway = yield* webhookGateway(database)
      const acme = yield* provision(gateway.ops)
      // The database refuses new webhook endpoints, accounts and messages with the SQLSTATE the test chooses.
      const refusals = yield* StorageRefusals.install(database)
      yield* sql(database, (sql) =>
        Effect.all([
          sql`CREATE FUNCTION refuse() RETURNS trigger AS $$ BEGIN PERFORM refused(); RETURN NEW; END $$ LANGUAGE plpgsql`,
          sql`CREATE TRIGGER refuse BEFORE INSERT OR UPDATE ON webhook_endpoints FOR EACH ROW EXECUTE FUNCTION refuse()`,
          sql`CREATE TRIGGER refuse BEFORE INSERT ON accounts FOR EACH ROW EXECUTE FUNCTION refuse()`,
          sql`CREATE TRIGGER refuse BEFORE INSERT ON messages FOR EACH ROW EXECUTE FUNCTION refuse()`
        ], { discard: true })
      )
      const request = (method: "PUT" | "POST", path: string, key: string, body: unknown) =>
        Effect.gen(function*() {
          const response = yield* gateway.http.execute(
            HttpClientRequest.make(method)(path).pipe(
              HttpClientRequest.setHeaders({ authorization: `Bearer ${key}` }),
              HttpClientRequest.bodyUnsafeJson(body)
            )
          )
          const json = (yield* response.json) as { code?: string; error?: string }
          return { answer: `${response.status} ${json.code ?? "ok"}`, retryAfter: response.headers["retry-after"], error: json.error }
        }).pipe(Effect.orDie)
      // Through a number's entity, the account's webhook entity, and an operator handler that writes itself.
      const number = acme.numbers[0]!
      let sends = 0
      const send = Effect.suspend(() =>
        request("POST", "/api/v1/messages/send", acme.accountKey, { to: uniquePhone(), text: `refused ${++sends}`, from: number.id })
      )
      const setWebhook = request("PUT", "/api/v1/webhook", acme.accountKey, { url: "http://127.0.0.1:9/hooks" })
      const addAccount = request("POST", "/ops/v1/accounts", OPERATOR_TOKEN, { email: "refused@example.kz", company: "Refused LLP" })

      const cases: ReadonlyArray<readonly [sqlstate: string, answer: string, retryAfter: string | undefined]> = [
        ["40P01", "503 capacity", "1"], // deadlock_detected
        ["40001", "503 capacity", "1"], // serialization_failure
        ["57P01", "503 capacity", "5"], // admin_shutdown: the database is restarting
        ["08006", "503 capacity", "5"], // connection_failure
        ["53300", "503 capacity", "5"], // too_many_connections
        ["22021", "400 invalid_param", undefined], // character_not_in_repertoire: a value it cannot store
        ["42703", "500 internal_error", undefined] // undefined_column: a bug, not the client's doing
      ]
      for (const [sqlstate, answer, retryAfter] of cases) {
        yield* refusals.refuseWith(sqlstate)
        for (const [name, call] of [["POST /messages/send", send], ["PUT /webhook", setWebhook], ["POST /ops/v1/accounts", addAccount]] as const) {
          const refused = yield* call
          assert.deepStrictEqual([refused.answer, refused.retryAfter], [answer, retryAfter], `${name}: ${sqlstate}`)
          // What PostgreSQL said is quoted only for a value it refused (it names the value's fault).
          if (!answer.startsWith("400")) assert.notInclude(refused.error, "refused by the test", `${name}: ${sqlstate}`)
        }
      }
      const [kept] = yield* sql(database, (sql) =>
        sql<{ messages: number; endpoints: number; accounts: number }>`
          SELECT (SELECT count(*)::int FROM messages WHERE text LIKE 'refused %') AS messages,
                 (SELECT count(*)::int FROM webhook_endpoints) AS endpoints,
                 (SELECT count(*)::int FROM accounts WHERE email = 'refused@example.kz') AS accounts`
      )
      assert.deepStrictEqual(kept, { messages: 0, endpoints: 0, accounts: 0 })
      // The bug is kept on the number for operators, as a defect is.
      const link = yield* call(gateway, "GET", `/ops/v1/numbers/${number.id}/link`, OPERATOR_TOKEN)
      assert.match(link.body.fault.error, /storage error: refused by the test/)

      // Nothing waited for a rebuilt entity: once the database takes it, the same request works at once.
      yield* refusals.accept
      assert.strictEqual((yield* send).answer, "200 ok")
      assert.strictEqual((yield* setWebhook).answer, "200 ok")
      assert.strictEqual((yield* addAccount).answer, "201 ok")
    }), { timeout: 60_000 })
})

describe("incoming messages with U+0000 and broken surrogates", () => {
  it.scopedLive("are stored cleaned and announced by webhook with the cleaned text and name", () =>
    Effect.gen(function*() {
      const receiver = yield* WebhookReceiver.start
      const gateway = yield* webhookGateway(yield* freshDatabase)
      const acme = yield* provision(gateway.ops)
      const phone = acme.numbers[0]!.phone
      const set = yield* call(gateway, "PUT", "/api/v1/webhook", acme.accountKey, { url: receiver.url("/acme") })
      assert.strictEqual(set.status, 200)
      const [p1, p2, p3] = [uniquePhone(), uniquePhone(), uniquePhone()]
      yield* gateway.sim.inbound({ to: phone, from: p1, name: "B\u0000d", text: "in\u0000nul" })
      yield* gateway.sim.inbound({ to: phone, from: p2, name: "ok", text: "lone \ud83d" })
      yield* gateway.sim.inbound({
        to: phone,
        from: p3,
        text: "\ude00 grp",
        group: { id: "120363000000000077", subject: "S\u0000ub \udbff" }
      })
      const expected: Record<string, [text: string, name: string]> = {
        [p1]: ["innul", "Bd"],
        [p2]: ["lone \ufffd", "ok"],
        [p3]: ["\ufffd grp", ""]
      }

      const messages = yield* eventually(
        Effect.map(call(gateway, "GET", "/api/v1/messages?limit=10", acme.accountKey), (a) =>
          (a.body.messages as Array<any>).filter((m) => m.direction === "in")),
        (ms) => ms.length === 3
      )
      const stored = Object.fromEntries(messages.map((m) => [m.peer === "" ? p3 : m.peer, [m.text, m.name, m.group_subject]]))
      assert.deepStrictEqual(stored[p1], ["innul", "Bd", null])
      assert.deepStrictEqual(stored[p2], ["lone \ufffd", "ok", null])
      const group = messages.find((m) => m.is_group)
      assert.deepStrictEqual([group.text, group.group_subject], ["\ufffd grp", "Sub \ufffd"])

      const events = yield* eventually(
        Effect.sync(() => receiver.received("/acme").filter((r) => r.json.event === "message")),
        (rs) => rs.length === 3,
        20_000
      )
      for (const e of events) {
        // The body is valid JSON text with nothing left to clean.
        assert.notMatch(e.body, /\\u0000|\\ud[89ab][0-9a-f]{2}(?!\\ud[c-f])/i)
        const data = e.json.data
        const sender = data.is_group ? p3 : data.from
        assert.deepStrictEqual([data.text, data.name], expected[sender], JSON.stringify(data))
      }
    }), { timeout: 60_000 })
})
