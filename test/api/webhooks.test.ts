/**
 * The account's webhook through the API and the operator CLI: setting it (the secret shown
 * once), refusing number keys and private addresses, rotating the secret, the delivery log and
 * resending one event or a time range.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { execFile } from "node:child_process"
import { join } from "node:path"
import { promisify } from "node:util"
import { Webhook } from "standardwebhooks"
import { provision } from "../support/Fixtures.js"
import { freshDatabase, OPERATOR_TOKEN, startGateway } from "../support/TestGateway.js"
import * as WebhookReceiver from "../support/WebhookReceiver.js"
import { call, code, emit, eventually, outbox, webhookGateway } from "../support/Webhooks.js"

const HOUR = 3_600_000

describe("GET and PUT /webhook", () => {
  it.scopedLive("creates the webhook with a secret shown once, changes it, turns it off; number keys get 403", () =>
    Effect.gen(function*() {
      const gateway = yield* webhookGateway(yield* freshDatabase)
      const acme = yield* provision(gateway.ops)
      const key = acme.accountKey
      assert.strictEqual(code(yield* call(gateway, "GET", "/api/v1/webhook", key)), "404 not_found")

      const created = yield* call(gateway, "PUT", "/api/v1/webhook", key, { url: "http://127.0.0.1:9/a" })
      assert.strictEqual(created.status, 200)
      assert.match(created.body.secret, /^whsec_[A-Za-z0-9+/]{43}=$/)
      assert.deepStrictEqual(
        [created.body.url, created.body.enabled, created.body.disabled_reason, created.body.notice, created.body.pending_events],
        ["http://127.0.0.1:9/a", true, null, null, 0]
      )
      const shown = yield* call(gateway, "GET", "/api/v1/webhook", key)
      assert.strictEqual(shown.status, 200)
      assert.notProperty(shown.body, "secret")
      assert.strictEqual(shown.body.url, "http://127.0.0.1:9/a")

      const moved = yield* call(gateway, "PUT", "/api/v1/webhook", key, { url: "http://127.0.0.1:9/b" })
      assert.deepStrictEqual([moved.body.url, moved.body.secret], ["http://127.0.0.1:9/b", undefined])
      const off = yield* call(gateway, "PUT", "/api/v1/webhook", key, { url: "http://127.0.0.1:9/b", enabled: false })
      assert.deepStrictEqual([off.body.enabled, off.body.disabled_reason, off.body.notice], [false, "manual", null])
      assert.isString(off.body.disabled_at)
      // While it is off, events are still recorded: they wait until it is on again.
      yield* emit(gateway.database, acme.accountId, 2)
      assert.lengthOf(yield* outbox(gateway.database, acme.accountId), 2)
      assert.strictEqual((yield* call(gateway, "GET", "/api/v1/webhook", key)).body.pending_events, 2)
      const on = yield* call(gateway, "PUT", "/api/v1/webhook", key, { url: "http://127.0.0.1:9/b" })
      assert.deepStrictEqual([on.body.enabled, on.body.disabled_reason, on.body.disabled_at], [true, null, null])

      // The typed client sees the same.
      const api = yield* gateway.client(key)
      assert.strictEqual((yield* api.webhooks.get()).url, "http://127.0.0.1:9/b")

      const numberKey = acme.numberKeys[0]!
      for (const [method, path, body] of [
        ["GET", "/api/v1/webhook", undefined],
        ["PUT", "/api/v1/webhook", { url: "http://127.0.0.1:9/c" }],
        ["POST", "/api/v1/webhook/rotate-secret", undefined],
        ["GET", "/api/v1/webhook/deliveries", undefined],
        ["GET", "/api/v1/webhook/deliveries/1", undefined],
        ["POST", "/api/v1/webhook/resend", { event_id: 1 }]
      ] as const) {
        assert.strictEqual(code(yield* call(gateway, method, path, numberKey, body)), "403 forbidden_for_number_key", `${method} ${path}`)
      }
      assert.strictEqual((yield* call(gateway, "GET", "/api/v1/webhook", key)).body.url, "http://127.0.0.1:9/b")
    }))

  it.scopedLive("refuses bad URLs, and private or loopback addresses unless the operator allows them", () =>
    Effect.gen(function*() {
      const gateway = yield* startGateway(yield* freshDatabase)
      const acme = yield* provision(gateway.ops)
      const put = (url: unknown) => call(gateway, "PUT", "/api/v1/webhook", acme.accountKey, { url })
      for (const url of ["ftp://example.com/hook", "example.com/hook", "https://user:pw@example.com/", 42]) {
        assert.strictEqual(code(yield* put(url)), "400 invalid_param", String(url))
      }
      for (const url of [
        "http://127.0.0.1:8080/hook",
        "http://localhost/hook",
        "http://[::1]/hook",
        "http://10.0.0.5/hook",
        "http://192.168.1.1/hook",
        "http://169.254.169.254/latest/meta-data"
      ]) {
        const answer = yield* put(url)
        assert.strictEqual(code(answer), "400 invalid_param", url)
        assert.match(answer.body.error, /private or local address/)
      }
      assert.strictEqual(code(yield* call(gateway, "GET", "/api/v1/webhook", acme.accountKey)), "404 not_found")
      assert.strictEqual(code(yield* call(gateway, "PUT", "/api/v1/webhook", acme.accountKey, {})), "400 invalid_param")
    }))
})

describe("webhook URLs nothing could be delivered to as meant", () => {
  it.scopedLive("port 0 and a fragment are refused with invalid_param, through the API and the operator API", () =>
    Effect.gen(function*() {
      // Private addresses allowed: only the port or the fragment can be what is refused.
      const gateway = yield* webhookGateway(yield* freshDatabase)
      const acme = yield* provision(gateway.ops)
      const refusals: ReadonlyArray<readonly [string, RegExp]> = [
        ["http://127.0.0.1:0/hook", /port 0/],
        ["http://127.0.0.1:00/hook", /port 0/],
        ["http://127.0.0.1:9/hook#part", /fragment/],
        ["http://127.0.0.1:9/hook?x=1#", /fragment/]
      ]
      for (const [path, key] of [["/api/v1/webhook", acme.accountKey], [`/ops/v1/accounts/${acme.accountId}/webhook`, OPERATOR_TOKEN]]) {
        for (const [url, reason] of refusals) {
          const answer = yield* call(gateway, "PUT", path, key, { url })
          assert.strictEqual(code(answer), "400 invalid_param", `${path} ${url}`)
          assert.match(answer.body.error, reason, url)
        }
      }
      assert.strictEqual(code(yield* call(gateway, "GET", "/api/v1/webhook", acme.accountKey)), "404 not_found")
      // A # written as %23 is part of the path or query, which is sent.
      const kept = yield* call(gateway, "PUT", "/api/v1/webhook", acme.accountKey, { url: "http://127.0.0.1:9/hook?tag=%23a" })
      assert.deepStrictEqual([kept.status, kept.body.url], [200, "http://127.0.0.1:9/hook?tag=%23a"])
    }))
})

describe("POST /webhook/rotate-secret", () => {
  it.scopedLive("answers a new secret once; the previous one keeps signing for 24 hours", () =>
    Effect.gen(function*() {
      const gateway = yield* webhookGateway(yield* freshDatabase)
      const acme = yield* provision(gateway.ops)
      assert.strictEqual(code(yield* call(gateway, "POST", "/api/v1/webhook/rotate-secret", acme.accountKey)), "404 not_found")
      const first = yield* call(gateway, "PUT", "/api/v1/webhook", acme.accountKey, { url: "http://127.0.0.1:9/a" })
      assert.isNull(first.body.previous_secret_expires_at)
      const before = Date.now()
      const rotated = yield* call(gateway, "POST", "/api/v1/webhook/rotate-secret", acme.accountKey)
      assert.strictEqual(rotated.status, 200)
      assert.match(rotated.body.secret, /^whsec_/)
      assert.notStrictEqual(rotated.body.secret, first.body.secret)
      const expires = Date.parse(rotated.body.previous_secret_expires_at)
      assert.isAtLeast(expires, before + 24 * HOUR - 1000)
      assert.isAtMost(expires, Date.now() + 24 * HOUR + 1000)
      assert.notProperty((yield* call(gateway, "GET", "/api/v1/webhook", acme.accountKey)).body, "secret")
    }))
})

describe("delivery log and resend", () => {
  it.scopedLive("lists deliveries newest first with status, attempts, code, latency; shows one with its attempts; resends", () =>
    Effect.gen(function*() {
      const receiver = yield* WebhookReceiver.start
      const gateway = yield* webhookGateway(yield* freshDatabase)
      const acme = yield* provision(gateway.ops)
      const other = yield* provision(gateway.ops)
      const key = acme.accountKey
      const set = yield* call(gateway, "PUT", "/api/v1/webhook", key, { url: receiver.url("/acme") })
      const secret: string = set.body.secret
      const since = new Date(Date.now() - 1000).toISOString()
      yield* emit(gateway.database, acme.accountId, 3)
      const first = yield* receiver.waitFor("/acme", 3)

      // The attempts are recorded after the receiver has them (by a batched writer): poll.
      const log = yield* eventually(
        call(gateway, "GET", "/api/v1/webhook/deliveries", key),
        (l) => l.status === 200 && l.body.deliveries.length === 3 && l.body.deliveries.every((r: any) => r.status === "delivered")
      )
      const rows = log.body.deliveries
      assert.isTrue(rows[0].id > rows[1].id && rows[1].id > rows[2].id)
      const oldest = rows[2]
      assert.deepStrictEqual(
        [oldest.event, oldest.attempts, oldest.response_code, oldest.error, oldest.resend, oldest.next_attempt_at],
        ["session.status", 1, 200, null, false, null]
      )
      assert.strictEqual(oldest.event_id, oldest.id)
      assert.isNumber(oldest.latency_ms)
      assert.isString(oldest.delivered_at)
      assert.strictEqual(first[0]!.headers["webhook-id"], `evt_${oldest.event_id}`)

      const one = yield* call(gateway, "GET", `/api/v1/webhook/deliveries/${oldest.id}`, key)
      assert.deepStrictEqual(one.body.payload, first[0]!.json)
      assert.lengthOf(one.body.attempt_log, 1)
      assert.deepStrictEqual(
        [one.body.attempt_log[0].attempt, one.body.attempt_log[0].response_code, one.body.attempt_log[0].url],
        [1, 200, receiver.url("/acme")]
      )
      assert.strictEqual(code(yield* call(gateway, "GET", `/api/v1/webhook/deliveries/${oldest.id}`, other.accountKey)), "404 not_found")
      const page = yield* call(gateway, "GET", `/api/v1/webhook/deliveries?limit=1&before=${rows[0].id}`, key)
      assert.deepStrictEqual(page.body.deliveries.map((r: any) => r.id), [rows[1].id])
      assert.strictEqual(code(yield* call(gateway, "GET", "/api/v1/webhook/deliveries?limit=0", key)), "400 invalid_param")
      assert.strictEqual(code(yield* call(gateway, "GET", "/api/v1/webhook/deliveries?status=lost", key)), "400 invalid_param")

      // One event again: same webhook-id and body, a new delivery at the end of the queue.
      const again = yield* call(gateway, "POST", "/api/v1/webhook/resend", key, { event_id: oldest.event_id })
      assert.deepStrictEqual([again.status, again.body], [202, { queued: 1 }])
      const resent = (yield* receiver.waitFor("/acme", 4))[3]!
      assert.strictEqual(resent.headers["webhook-id"], `evt_${oldest.event_id}`)
      assert.strictEqual(resent.body, first[0]!.body)
      assert.deepStrictEqual(new Webhook(secret).verify(resent.body, resent.headers), first[0]!.json)
      const withResend = yield* eventually(
        call(gateway, "GET", "/api/v1/webhook/deliveries", key),
        (a) => a.body.deliveries[0]?.status === "delivered"
      )
      assert.deepStrictEqual(
        [withResend.body.deliveries[0].event_id, withResend.body.deliveries[0].resend],
        [oldest.event_id, true]
      )

      // A time range: the original events in it, not the resends, in their order.
      const range = yield* call(gateway, "POST", "/api/v1/webhook/resend", key, { since, until: new Date(Date.now() + 1000).toISOString() })
      assert.deepStrictEqual([range.status, range.body], [202, { queued: 3 }])
      const all = yield* receiver.waitFor("/acme", 7)
      assert.deepStrictEqual(all.slice(4).map((r) => r.body), first.map((r) => r.body))
      const delivered = yield* eventually(
        call(gateway, "GET", "/api/v1/webhook/deliveries?status=delivered&limit=500", key),
        (a) => a.body.deliveries.length === 7
      )
      assert.lengthOf(delivered.body.deliveries, 7)
      assert.lengthOf((yield* call(gateway, "GET", "/api/v1/webhook/deliveries?status=pending", key)).body.deliveries, 0)

      assert.strictEqual(code(yield* call(gateway, "POST", "/api/v1/webhook/resend", key, { event_id: 999_999 })), "404 not_found")
      assert.strictEqual(code(yield* call(gateway, "POST", "/api/v1/webhook/resend", key, {})), "400 invalid_param")
      assert.strictEqual(
        code(yield* call(gateway, "POST", "/api/v1/webhook/resend", key, { event_id: oldest.event_id, since })),
        "400 invalid_param"
      )
      assert.strictEqual(code(yield* call(gateway, "POST", "/api/v1/webhook/resend", key, { since: "yesterday" })), "400 invalid_param")
      // Another account's event is not found, and an account without a webhook has nothing to resend.
      yield* call(gateway, "PUT", "/api/v1/webhook", other.accountKey, { url: receiver.url("/other") })
      assert.strictEqual(
        code(yield* call(gateway, "POST", "/api/v1/webhook/resend", other.accountKey, { event_id: oldest.event_id })),
        "404 not_found"
      )
      const none = yield* provision(gateway.ops, { numbers: 0 })
      assert.strictEqual(code(yield* call(gateway, "POST", "/api/v1/webhook/resend", none.accountKey, { event_id: 1 })), "404 not_found")
    }))
})

describe("operator CLI", () => {
  it.scopedLive("webhook set, show, rotate and reseal-secrets", () =>
    Effect.gen(function*() {
      const gateway = yield* webhookGateway(yield* freshDatabase)
      const acme = yield* provision(gateway.ops)
      /** The CLI's JSON answer; `exit` 1 expected when it reports an error. */
      const cli = (...args: Array<string>) =>
        Effect.promise(async () => {
          const { stdout, exit } = await promisify(execFile)(
            process.execPath,
            ["--import", "tsx", join(import.meta.dirname, "../../apps/gateway/src/cli.ts"), ...args],
            { env: { ...process.env, WAGATE_URL: gateway.url, OPERATOR_TOKEN } }
          ).then(({ stdout }) => ({ stdout, exit: 0 }), (e: { stdout: string; code: number }) => ({ stdout: e.stdout, exit: e.code }))
          const answer = JSON.parse(stdout)
          assert.strictEqual(exit, "code" in answer ? 1 : 0, stdout)
          return answer
        })
      const set = yield* cli("webhook", "set", "--account", String(acme.accountId), "--url", "http://127.0.0.1:9/ops")
      assert.match(set.secret, /^whsec_/)
      assert.deepStrictEqual([set.url, set.enabled], ["http://127.0.0.1:9/ops", true])
      const shown = yield* cli("webhook", "show", "--account", String(acme.accountId))
      assert.deepStrictEqual([shown.url, shown.secret], ["http://127.0.0.1:9/ops", undefined])
      const off = yield* cli("webhook", "set", "--account", String(acme.accountId), "--url", "http://127.0.0.1:9/ops", "--disable")
      assert.deepStrictEqual([off.enabled, off.disabled_reason, off.secret], [false, "manual", undefined])
      const rotated = yield* cli("webhook", "rotate", "--account", String(acme.accountId))
      assert.match(rotated.secret, /^whsec_/)
      assert.notStrictEqual(rotated.secret, set.secret)
      assert.deepStrictEqual(yield* cli("webhook", "show", "--account", "999999"), { error: "No account 999999", code: "not_found" })
      // Every secret is already sealed with the gateway's current key: nothing to do.
      const resealed = yield* cli("webhook", "reseal-secrets")
      assert.deepStrictEqual([resealed.resealed, resealed.unreadable], [0, 0])
      // The account sees what the operator set.
      assert.strictEqual((yield* call(gateway, "GET", "/api/v1/webhook", acme.accountKey)).body.url, "http://127.0.0.1:9/ops")
    }), { timeout: 300_000 })
})
