/**
 * One attempt against a real HTTP receiver: the status it answers, or why there was none (a
 * hang past the timeout, a closed connection, a refused connection, a private address), and
 * the 10-second default timeout driven by TestClock.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as FiberRef from "effect/FiberRef"
import * as TestClock from "effect/TestClock"
import * as WebhookReceiver from "../../../test/support/WebhookReceiver.js"
import { defaults, WebhookConfig } from "../src/WebhookConfig.js"
import * as WebhookSender from "../src/WebhookSender.js"

const body = JSON.stringify({ event: "session.status", timestamp: 1, data: { status: "connected" } })
const headers = { "content-type": "application/json", "webhook-id": "evt_1" }

describe("WebhookSender", () => {
  it.scopedLive("reports the receiver's status, whatever it is, and sends the body and headers", () =>
    Effect.gen(function*() {
      const receiver = yield* WebhookReceiver.start
      const sender = yield* WebhookSender.make({ timeout: "2 seconds", allowPrivate: true })
      for (const status of [200, 204, 302, 400, 410, 500, 503]) {
        receiver.answer(`/s${status}`, status)
        const attempt = yield* sender.post(receiver.url(`/s${status}`), headers, body)
        assert.deepStrictEqual([attempt.status, attempt.error], [status, null])
        assert.isAtLeast(attempt.latencyMs, 0)
      }
      const [got] = receiver.received("/s200")
      assert.strictEqual(got!.body, body)
      assert.strictEqual(got!.headers["webhook-id"], "evt_1")
      assert.strictEqual(got!.headers["content-length"], String(Buffer.byteLength(body)))
    }))

  it.scopedLive("a receiver that hangs times out; one that closes the connection, or is not there, fails", () =>
    Effect.gen(function*() {
      const receiver = yield* WebhookReceiver.start
      const sender = yield* WebhookSender.make({ timeout: "300 millis", allowPrivate: true })
      receiver.answer("/hang", "hang")
      receiver.answer("/close", "close")
      const started = Date.now()
      const hung = yield* sender.post(receiver.url("/hang"), headers, body)
      assert.deepStrictEqual([hung.status, hung.error], [null, "No answer within 300ms"])
      assert.isAtLeast(Date.now() - started, 290)
      // Ended by its timeout, not hanging (generous for a busy machine).
      assert.isBelow(Date.now() - started, 10_000)
      const closed = yield* sender.post(receiver.url("/close"), headers, body)
      assert.strictEqual(closed.status, null)
      assert.match(closed.error ?? "", /closed the connection without answering/)
      const refused = yield* sender.post("http://127.0.0.1:1/hook", headers, body)
      assert.strictEqual(refused.status, null)
      assert.match(refused.error ?? "", /refused/)
      // The same receiver answers normally afterwards on a fresh connection.
      receiver.answer("/hang", 200)
      assert.strictEqual((yield* sender.post(receiver.url("/hang"), headers, body)).status, 200)
    }))

  it.scopedLive("a 2xx whose body never ends holds no connection the next request needs; complete answers keep theirs", () =>
    Effect.gen(function*() {
      const receiver = yield* WebhookReceiver.start
      const sender = yield* WebhookSender.make({ timeout: "5 seconds", allowPrivate: true })
      // 200, Content-Length 100, 7 bytes, and the socket held open.
      receiver.answer("/stuck", "partial")
      const stuck = yield* sender.post(receiver.url("/stuck"), headers, body)
      assert.deepStrictEqual([stuck.status, stuck.error], [200, null])
      const started = Date.now()
      const next = yield* sender.post(receiver.url("/ok"), headers, body)
      assert.deepStrictEqual([next.status, next.error], [200, null])
      // Waiting for the held socket would mean the whole 5 s timeout (generous for a busy machine).
      assert.isBelow(Date.now() - started, 4000)
      const [held] = receiver.received("/stuck")
      const [fresh] = receiver.received("/ok")
      assert.notStrictEqual(fresh!.remotePort, held!.remotePort, "sent on a new connection")
      // Answers read whole leave their connection kept alive for the next request.
      for (let i = 0; i < 3; i++) assert.strictEqual((yield* sender.post(receiver.url("/ok"), headers, body)).status, 200)
      assert.deepStrictEqual(new Set(receiver.received("/ok").map((r) => r.remotePort)).size, 1)
    }))

  it.scopedLive("attempts keep nothing in the fiber that sends them: an entity's delivery loop sends for as long as it runs", () =>
    Effect.gen(function*() {
      const receiver = yield* WebhookReceiver.start
      const sender = yield* WebhookSender.make({ timeout: "5 seconds", allowPrivate: true })
      receiver.answer("/ok", 200)
      receiver.answer("/fail", 500)
      // The history of the fiber's context: each entry holds a copy of the context (with its map).
      const history = Effect.map(Effect.getFiberRefs, (refs) => refs.locals.get(FiberRef.currentContext)?.length ?? 0)
      yield* sender.post(receiver.url("/ok"), headers, body)
      const before = yield* history
      for (let i = 0; i < 50; i++) {
        assert.strictEqual((yield* sender.post(receiver.url(i % 5 === 0 ? "/fail" : "/ok"), headers, body)).status, i % 5 === 0 ? 500 : 200)
      }
      assert.isAtMost((yield* history) - before, 1)
    }))

  it.scopedLive("without permission for private addresses nothing is sent to loopback", () =>
    Effect.gen(function*() {
      const receiver = yield* WebhookReceiver.start
      const sender = yield* WebhookSender.make({ timeout: "2 seconds", allowPrivate: false })
      const attempt = yield* sender.post(receiver.url("/x"), headers, body)
      assert.strictEqual(attempt.status, null)
      assert.match(attempt.error ?? "", /private or local address/)
      assert.lengthOf(receiver.received("/x"), 0)
    }))

  it.scoped("the default timeout is 10 seconds", () =>
    Effect.gen(function*() {
      assert.strictEqual(Duration.toMillis((yield* WebhookConfig).timeout), 10_000)
      assert.strictEqual(Duration.toMillis(defaults.timeout), 10_000)
      const receiver = yield* WebhookReceiver.start
      receiver.answer("/hang", "hang")
      const sender = yield* WebhookSender.make({ timeout: defaults.timeout, allowPrivate: true })
      const fiber = yield* Effect.fork(sender.post(receiver.url("/hang"), headers, body))
      // The request really reaches the receiver, which never answers.
      yield* Effect.promise(() => Effect.runPromise(receiver.waitFor("/hang", 1)))
      yield* TestClock.adjust("9999 millis")
      assert.isTrue((yield* Fiber.poll(fiber))._tag === "None", "still waiting at 9.999 s")
      yield* TestClock.adjust("1 millis")
      const attempt = yield* Fiber.join(fiber)
      assert.deepStrictEqual([attempt.status, attempt.error], [null, "No answer within 10s"])
    }))
})
