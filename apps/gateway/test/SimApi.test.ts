/**
 * The simulator's control API over HTTP: operator token, snake_case bodies, errors as
 * `{error, code}`, and that each endpoint acts on the network the sessions live on.
 *
 * The handlers live in the gateway app (apps/gateway/src/http/handlers/SimHttp.ts); this suite
 * serves them on their own API, without the gateway's error middleware.
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServer from "@effect/platform/HttpServer"
import { assert, describe, it } from "@effect/vitest"
import { OperatorToken } from "../src/auth/OperatorToken.js"
import { Settings } from "../src/Config.js"
import { SimAuthLive, SimHttp, SimHttpApi } from "../src/http/handlers/SimHttp.js"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schedule from "effect/Schedule"
import * as SimNetwork from "@wagate/whatsapp/sim/SimNetwork"
import type { DriverEvent } from "@wagate/whatsapp/WhatsAppDriver"
import { RequestCounter } from "../src/infra/RequestCounter.js"

const TOKEN = "wag_op_test-token"
const A = "77010000001"
const PEER = "77779998877"

/** A network, its control API as a fetch-style handler, and a caller with the operator token. */
const setup = Effect.gen(function*() {
  const network = yield* SimNetwork.make({ autoScan: false })
  const layer = HttpApiBuilder.api(SimHttpApi).pipe(
    Layer.provide(SimHttp),
    Layer.provide(SimAuthLive),
    Layer.provide(Layer.succeed(SimNetwork.SimNetwork, network)),
    Layer.provide([OperatorToken.Default, RequestCounter.layerMemory]),
    Layer.provide(Settings.make({ operatorToken: Option.some(Redacted.make(TOKEN)) })),
    Layer.merge(HttpServer.layerContext)
  )
  const web = HttpApiBuilder.toWebHandler(layer)
  yield* Effect.addFinalizer(() => Effect.promise(() => web.dispose()))
  const call = (method: string, path: string, body?: unknown, token: string | null = TOKEN) =>
    Effect.promise(async () => {
      const headers: Record<string, string> = {}
      if (token !== null) headers.authorization = `Bearer ${token}`
      if (body !== undefined) headers["content-type"] = "application/json"
      const response = await web.handler(
        new Request(`http://sim.test/sim/v1${path}`, {
          method,
          headers,
          ...(body === undefined ? {} : { body: JSON.stringify(body) })
        })
      )
      const text = await response.text()
      return { status: response.status, body: text === "" ? null : JSON.parse(text) }
    })
  return { network, call }
})

/** Waits (a second at most) for the session's fiber to have handled what the test expects. */
const eventually = (done: () => boolean) =>
  Effect.suspend(() => done() ? Effect.void : Effect.fail("not yet")).pipe(
    Effect.retry(Schedule.spaced("1 millis")),
    Effect.timeout("1 second"),
    Effect.orDie
  )

/** A session of A that records what reaches it. */
const session = (network: SimNetwork.SimNetworkService) =>
  Effect.gen(function*() {
    const events: Array<DriverEvent> = []
    const s = yield* network.connect({ phone: A }, (event) => Effect.sync(() => void events.push(event)))
    return { session: s, events }
  })

describe("SimApi over HTTP", () => {
  it.live("asks for the operator token: none is unauthorized, a wrong one invalid_key", () =>
    Effect.gen(function*() {
      const { call } = yield* setup
      assert.deepStrictEqual((yield* call("GET", "/config", undefined, null)).status, 401)
      assert.deepStrictEqual((yield* call("GET", "/config", undefined, null)).body.code, "unauthorized")
      assert.deepStrictEqual(yield* call("GET", "/config", undefined, "wag_op_wrong"), {
        status: 401,
        body: { error: "Operator token is not valid", code: "invalid_key" }
      })
    }).pipe(Effect.scoped))

  it.live("reads and changes the settings in snake_case; absent fields keep their value", () =>
    Effect.gen(function*() {
      const { call, network } = yield* setup
      const changed = yield* call("PUT", "/config", { read_delay_ms: null, delivered_delay_ms: 50 })
      assert.deepStrictEqual(changed, {
        status: 200,
        body: {
          exists_by_default: true,
          auto_scan: false,
          scan_delay_ms: 1000,
          qr_refresh_ms: 20000,
          delivered_delay_ms: 50,
          read_delay_ms: null,
          reconnect_delay_ms: 1000
        }
      })
      assert.deepStrictEqual((yield* call("GET", "/config")).body, changed.body)
      assert.strictEqual((yield* network.config).deliveredDelayMs, 50)
      assert.strictEqual((yield* call("PUT", "/config", { scan_delay_ms: -1 })).status, 400)
    }).pipe(Effect.scoped))

  it.live("registers phones, injects failures and auto-replies, resets", () =>
    Effect.gen(function*() {
      const { call, network } = yield* setup
      assert.deepStrictEqual(yield* call("POST", "/phones", { phone: PEER, exists: false }), {
        status: 200,
        body: { phone: PEER, exists: false }
      })
      assert.strictEqual(yield* network.exists(PEER), false)
      assert.strictEqual((yield* call("POST", "/phones", { phone: "not a phone", exists: false })).status, 400)
      assert.strictEqual((yield* call("POST", "/failures", { to: PEER, mode: "reject", times: 1 })).status, 204)
      assert.strictEqual((yield* call("POST", "/failures", { to: PEER, mode: "explode" })).status, 400)
      assert.strictEqual((yield* call("POST", `/peers/${PEER}/auto-reply`, { text: "ok", delay_ms: 10 })).status, 204)
      assert.strictEqual((yield* call("POST", "/reset")).status, 204)
      assert.strictEqual(yield* network.exists(PEER), true)
    }).pipe(Effect.scoped))

  it.live("numbers the simulator has no session for are not_found; a malformed phone is a bad request", () =>
    Effect.gen(function*() {
      const { call } = yield* setup
      assert.deepStrictEqual(yield* call("GET", `/numbers/${A}`), {
        status: 404,
        body: { error: `The simulator knows no number ${A}`, code: "not_found" }
      })
      assert.strictEqual((yield* call("GET", "/numbers/12ab")).status, 400)
    }).pipe(Effect.scoped))

  it.live("scan and pair answer the number's state; wrong state is not_connected, a wrong code invalid_param", () =>
    Effect.gen(function*() {
      const { call, network } = yield* setup
      const { events, session: s } = yield* session(network)
      yield* s.link({ kind: "qr" })
      const shown = yield* call("GET", `/numbers/${A}`)
      assert.deepStrictEqual(shown, {
        status: 200,
        body: {
          phone: A,
          linked: false,
          status: "SCAN_QR_CODE",
          qr: `sim-qr:${A}:1`,
          pairing_code: null,
          reason: null,
          session_open: true,
          queued: 0,
          sessions: 1
        }
      })
      const paired = yield* call("POST", `/numbers/${A}/pair`, { code: "AAAAAAAA" })
      assert.deepStrictEqual([paired.status, paired.body.code], [409, "not_connected"])
      const scanned = yield* call("POST", `/numbers/${A}/scan`)
      assert.deepStrictEqual([scanned.status, scanned.body.linked, scanned.body.status], [200, true, "WORKING"])
      const again = yield* call("POST", `/numbers/${A}/scan`)
      assert.deepStrictEqual([again.status, again.body.code], [409, "not_connected"])
      assert.strictEqual((yield* call("POST", `/numbers/77000000009/scan`)).body.code, "not_found")

      const lost = yield* call("POST", `/numbers/${A}/disconnect`, { reason: "logged_out" })
      assert.deepStrictEqual([lost.body.linked, lost.body.status, lost.body.reason], [false, "STOPPED", "logged out from the phone"])
      assert.strictEqual((yield* call("POST", `/numbers/${A}/disconnect`, { reason: "bored" })).status, 400)

      yield* s.link({ kind: "code" })
      const code = (yield* call("GET", `/numbers/${A}`)).body.pairing_code as string
      const wrong = yield* call("POST", `/numbers/${A}/pair`, { code: code === "ZZZZZZZZ" ? "YYYYYYYY" : "ZZZZZZZZ" })
      assert.deepStrictEqual([wrong.status, wrong.body.code], [400, "invalid_param"])
      const right = yield* call("POST", `/numbers/${A}/pair`, { code: `${code.slice(0, 4)}-${code.slice(4)}` })
      assert.deepStrictEqual([right.status, right.body.status], [200, "WORKING"])
      assert.deepStrictEqual(
        events.flatMap((e) => e._tag === "Connection" ? [e.status] : []),
        ["none", "STARTING", "SCAN_QR_CODE", "WORKING", "STOPPED", "STARTING", "SCAN_QR_CODE", "WORKING"]
      )
    }).pipe(Effect.scoped))

  it.live("inbound reaches the session; the sent log reads back with its filters", () =>
    Effect.gen(function*() {
      const { call, network } = yield* setup
      const { events, session: s } = yield* session(network)
      yield* s.link({ kind: "qr" })
      yield* network.scan(A)
      const written = yield* call("POST", "/inbound", { to: A, from: PEER, name: "Aigerim", text: "Сәлем" })
      assert.deepStrictEqual([written.status, written.body.delivered], [201, true])
      yield* s.send({ waMessageId: "M1", to: PEER, content: { kind: "text", text: "Hello" } })
      yield* eventually(() => events.some((e) => e._tag === "Incoming"))
      const incoming = events.flatMap((e) => e._tag === "Incoming" ? [e.message] : [])
      assert.deepStrictEqual(incoming.map((m) => [m.waMessageId, m.name, m.text]), [[written.body.wa_message_id, "Aigerim", "Сәлем"]])

      const log = yield* call("GET", `/sent?from=${A}`)
      assert.strictEqual(log.status, 200)
      assert.deepStrictEqual({ ...log.body[0], sent_at: "" }, {
        wa_message_id: "M1",
        from: A,
        to: PEER,
        kind: "text",
        text: "Hello",
        caption: null,
        filename: null,
        media_size: null,
        mime_type: null,
        sent_at: "",
        ack: "sent"
      })
      assert.match(log.body[0].sent_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
      assert.deepStrictEqual((yield* call("GET", `/sent?to=77000000009`)).body, [])
    }).pipe(Effect.scoped))
})
