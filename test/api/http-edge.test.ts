/**
 * The edge of the HTTP surface, where clients can send anything: text that cannot be stored
 * (U+0000, unpaired surrogates) is refused with 400 invalid_param on every API, deep nesting and
 * multipart labels never reach a handler, bodies over the limit get 413 JSON even when chunked,
 * error descriptions stay short, Node's own refusals (malformed requests, oversized headers,
 * slow requests) answer JSON `{error, code}`, a slow body times out in seconds, and idle
 * keep-alive connections are kept 65 s.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Effect from "effect/Effect"
import { Agent, get } from "node:http"
import { connect } from "node:net"
import { OPERATOR_TOKEN } from "../support/TestGateway.js"
import { provision, uniquePhone } from "../support/Fixtures.js"
import * as ManualClock from "../support/ManualClock.js"
import { freshDatabase, type RunningGateway, startGateway, TestGateway } from "../support/TestGateway.js"

interface Answer {
  readonly status: number
  readonly json: any
  readonly length: number
}

const call = (method: string, path: string, key: string, body?: unknown, contentType = "application/json") =>
  Effect.gen(function*() {
    const { http } = yield* TestGateway
    const request = HttpClientRequest.make(method as "POST")(path).pipe(
      HttpClientRequest.setHeaders({ authorization: `Bearer ${key}` }),
      body === undefined
        ? (r) => r
        : HttpClientRequest.bodyText(typeof body === "string" ? body : JSON.stringify(body), contentType)
    )
    const response = yield* http.execute(request)
    const text = yield* response.text
    let json: any
    try {
      json = JSON.parse(text)
    } catch {
      json = undefined
    }
    return { status: response.status, json, length: text.length } satisfies Answer
  })

const codeOf = (a: Answer) => `${a.status} ${a.json?.code ?? "ok"}`

const isErrorBody = (json: unknown) =>
  typeof json === "object" && json !== null && Object.keys(json).sort().join(",") === "code,error"

interface RawAnswer {
  readonly status: number
  readonly headers: string
  readonly json: any
}

/**
 * Writes `parts` to a fresh connection (each after `gapMs`), stops writing once an answer
 * starts, and reads until the server closes.
 */
const raw = (url: string, parts: ReadonlyArray<string | Buffer>, gapMs = 0) =>
  Effect.async<RawAnswer>((resume) => {
    const socket = connect(Number(new URL(url).port), "127.0.0.1")
    let data = ""
    let answered = false
    const finish = () => {
      const [head, ...rest] = data.split("\r\n\r\n")
      let json: any
      try {
        json = JSON.parse(rest.join("\r\n\r\n"))
      } catch {
        json = undefined
      }
      resume(Effect.succeed({ status: Number(head.split(" ")[1] ?? 0), headers: head.toLowerCase(), json }))
    }
    socket.on("data", (chunk) => {
      answered = true
      data += chunk.toString("utf8")
    })
    socket.on("close", finish)
    socket.on("error", () => undefined)
    const write = async () => {
      for (const part of parts) {
        if (answered || socket.destroyed) return
        await new Promise<void>((resolve) => socket.write(part, () => resolve()))
        if (gapMs > 0) await new Promise((resolve) => setTimeout(resolve, gapMs))
      }
    }
    socket.on("connect", () => void write().catch(() => undefined))
    return Effect.sync(() => socket.destroy())
  })

const nested = (depth: number, inner = "1") => "[".repeat(depth) + inner + "]".repeat(depth)

layer(TestGateway.layer(), { excludeTestServices: true })("the HTTP edge", (it) => {
  it.effect("a text with U+0000 or an unpaired surrogate is refused 400 invalid_param; the number keeps sending", () =>
    Effect.gen(function*() {
      const { ops } = yield* TestGateway
      const acme = yield* provision(ops)
      const key = acme.numberKeys[0]
      const to = uniquePhone()
      const url = "https://files.example.com/a.png"
      for (
        const body of [
          { to, text: "a\u0000b" },
          { to, text: "broken \ud83d" },
          { to, text: "broken \ude00 too" },
          { to, image: { url, caption: "cap\u0000tion" } },
          { to, document: { url, filename: "a\u0000.pdf" } },
          { to: "7701\u00001234567", text: "hi" }
        ]
      ) {
        const answer = yield* call("POST", "/api/v1/messages/send", key, body)
        assert.strictEqual(codeOf(answer), "400 invalid_param", JSON.stringify(body))
        assert.match(answer.json.error, /U\+0000 or an unpaired UTF-16 surrogate/)
      }
      // The same number sends at once: nothing of the refused requests reached it.
      const sent = yield* call("POST", "/api/v1/messages/send", key, { to, text: "a normal message" })
      assert.strictEqual(codeOf(sent), "200 ok")
      // A well-formed pair (an emoji) is of course fine.
      const emoji = yield* call("POST", "/api/v1/contacts/check", acme.accountKey, { phone: "77010000000\ud83d\ude00" })
      assert.notStrictEqual(emoji.json?.error?.includes("surrogate"), true)
    }))

  it.effect("every API refuses such text: webhook URL, operator note and account, simulator, query", () =>
    Effect.gen(function*() {
      const { ops } = yield* TestGateway
      const acme = yield* provision(ops)
      const before = yield* ops.ops.showAccount({ path: { id: acme.accountId } })
      const cases: Array<readonly [string, string, string, unknown]> = [
        ["PUT", "/api/v1/webhook", acme.accountKey, { url: "https://hooks.example.com/\u0000" }],
        ["POST", "/api/v1/contacts/check", acme.accountKey, { phone: "\ud800" }],
        ["POST", "/api/v1/webhook/resend", acme.accountKey, { event_id: "evt\u0000" }],
        ["POST", `/ops/v1/accounts/${acme.accountId}/credit`, OPERATOR_TOKEN, { amount: 1, note: "a\u0000b" }],
        ["POST", "/ops/v1/accounts", OPERATOR_TOKEN, { email: "x@example.kz", company: "Bad \udfff LLP" }],
        ["PUT", `/ops/v1/accounts/${acme.accountId}/webhook`, OPERATOR_TOKEN, { url: "https://h.example.com/\ud83d" }],
        ["POST", `/sim/v1/peers/${uniquePhone()}/auto-reply`, OPERATOR_TOKEN, { text: "a\u0000", delay_ms: 0 }],
        ["GET", "/api/v1/messages?chat=%00", acme.accountKey, undefined],
        ["POST", "/api/v1/contacts/check", acme.accountKey, { "ke\u0000y": "77010000000" }]
      ]
      for (const [method, path, key, body] of cases) {
        const answer = yield* call(method, path, key, body)
        assert.strictEqual(codeOf(answer), "400 invalid_param", `${method} ${path}`)
      }
      const from = yield* call("POST", "/api/v1/contacts/check", acme.accountKey, { phone: "77010000000", from: "1\u0000" })
      assert.strictEqual(codeOf(from), "400 invalid_from")
      // The note was refused as a whole: no money moved.
      const shown = yield* ops.ops.showAccount({ path: { id: acme.accountId } })
      assert.strictEqual(shown.balance.balance, before.balance.balance)
      // The simulator's inbound messages stand for the network, which may deliver anything.
      const inbound = yield* call("POST", "/sim/v1/inbound", OPERATOR_TOKEN, {
        to: acme.numbers[0].phone,
        from: uniquePhone(),
        text: "from the network \u0000"
      })
      assert.strictEqual(inbound.status, 201)
    }))

  it.effect("a body that is not UTF-8 answers 400 invalid_json; nothing is sent, and UTF-8 text arrives as written", () =>
    Effect.gen(function*() {
      const { http, ops, sim } = yield* TestGateway
      const acme = yield* provision(ops)
      const to = uniquePhone()
      const post = (bytes: Buffer) =>
        Effect.flatMap(
          http.execute(HttpClientRequest.post("/api/v1/messages/send").pipe(
            HttpClientRequest.setHeaders({ authorization: `Bearer ${acme.numberKeys[0]}` }),
            HttpClientRequest.bodyUint8Array(bytes, "application/json")
          )),
          (response) => Effect.map(response.json, (json: any) => ({ status: response.status, json }))
        )
      // "café" in Latin-1: 0xE9 alone is no UTF-8.
      for (const text of ["caf\xe9 latin1 text", "\xff\xfe", "truncated \xd0"]) {
        const refused = yield* post(Buffer.from(`{"to":"${to}","text":"${text}"}`, "latin1"))
        assert.deepStrictEqual([refused.status, refused.json.code], [400, "invalid_json"], text)
        assert.match(refused.json.error, /not valid UTF-8/)
      }
      // Encoded as UTF-8 the same text is sent as written.
      const sent = yield* post(Buffer.from(JSON.stringify({ to, text: "café latin1 text" }), "utf8"))
      assert.strictEqual(sent.status, 200)
      assert.deepStrictEqual((yield* sim.sent({ to })).map((m) => m.text), ["café latin1 text"])
    }))

  it.effect("operator text fields: a blank company is refused; company, e-mail and ledger note have maximum lengths", () =>
    Effect.gen(function*() {
      const { ops } = yield* TestGateway
      const acme = yield* provision(ops)
      const before = yield* ops.ops.showAccount({ path: { id: acme.accountId } })
      const account = (email: string, company: string) => call("POST", "/ops/v1/accounts", OPERATOR_TOKEN, { email, company })
      const credit = (note: string) =>
        call("POST", `/ops/v1/accounts/${acme.accountId}/credit`, OPERATOR_TOKEN, { amount: 1, note })
      const email = () => `fields-${uniquePhone()}@example.kz`
      const refused = [
        ["blank company", yield* account(email(), "   ")],
        ["empty company", yield* account(email(), "")],
        ["company of 201 characters", yield* account(email(), "x".repeat(201))],
        ["company of 300 KB", yield* account(email(), "x".repeat(300_000))],
        ["e-mail of 255 characters", yield* account(`${"x".repeat(244)}@example.kz`, "Acme")],
        ["note of 501 characters", yield* credit("x".repeat(501))],
        ["note of 900 KB", yield* credit("x".repeat(900_000))]
      ] as const
      for (const [what, answer] of refused) {
        assert.strictEqual(codeOf(answer), "400 invalid_param", what)
        assert.isBelow(answer.length, 1000, what)
      }
      assert.match(refused[0][1].json.error, /^company: /)
      assert.strictEqual((yield* ops.ops.showAccount({ path: { id: acme.accountId } })).balance.balance, before.balance.balance)
      // At the limits, accepted; the company is kept trimmed.
      const longest = yield* account(email(), ` ${"x".repeat(198)} `)
      assert.deepStrictEqual([longest.status, longest.json.company], [201, "x".repeat(198)])
      assert.strictEqual(codeOf(yield* credit("x".repeat(500))), "200 ok")
    }))

  it.effect("JSON nested 10,000 levels, in the body or in a field, answers 400 invalid_json", () =>
    Effect.gen(function*() {
      const { ops } = yield* TestGateway
      const acme = yield* provision(ops)
      const bodies = [
        nested(10_000),
        `{"event_id": ${nested(10_000, "\"x\"")}}`,
        `{"a":`.repeat(10_000) + "1" + "}".repeat(10_000),
        nested(100_000)
      ]
      const targets: Array<readonly [string, string, string]> = [
        ["POST", "/api/v1/webhook/resend", acme.accountKey],
        ["POST", "/api/v1/contacts/check", acme.accountKey],
        ["POST", "/api/v1/messages/send", acme.accountKey],
        ["PUT", "/api/v1/webhook", acme.accountKey],
        ["POST", `/ops/v1/accounts/${acme.accountId}/credit`, OPERATOR_TOKEN],
        ["PUT", "/sim/v1/config", OPERATOR_TOKEN]
      ]
      for (const [method, path, key] of targets) {
        for (const body of bodies) {
          const answer = yield* call(method, path, key, body)
          assert.strictEqual(codeOf(answer), "400 invalid_json", `${method} ${path} ${body.slice(0, 12)}`)
        }
      }
    }), { timeout: 60_000 })

  it.effect("multipart and other labels are read as JSON: never a 500", () =>
    Effect.gen(function*() {
      const { ops } = yield* TestGateway
      const acme = yield* provision(ops)
      const json = JSON.stringify({ phone: "77010000000" })
      const form = "--xyz\r\nContent-Disposition: form-data; name=\"phone\"\r\n\r\n77010000000\r\n--xyz--\r\n"
      for (const type of ["multipart/form-data; boundary=xyz", "multipart/form-data", "multipart/mixed", "text/plain"]) {
        for (const [method, path, key] of [
          ["POST", "/api/v1/contacts/check", acme.accountKey],
          ["POST", "/api/v1/webhook/resend", acme.accountKey],
          ["POST", "/api/v1/media/delete", acme.accountKey],
          ["POST", "/ops/v1/accounts", OPERATOR_TOKEN]
        ] as const) {
          const asJson = yield* call(method, path, key, json, type)
          assert.isBelow(asJson.status, 500, `${type} ${path}`)
          if (asJson.status >= 400) assert.isTrue(isErrorBody(asJson.json), `${type} ${path}`)
          const asForm = yield* call(method, path, key, form, type)
          assert.strictEqual(codeOf(asForm), "400 invalid_json", `${type} ${path}`)
        }
      }
    }))

  it.effect("a body over the limit gets 413 payload_too_large as JSON, chunked or not", () =>
    Effect.gen(function*() {
      const { ops, url } = yield* TestGateway
      const acme = yield* provision(ops)
      const chunk = Buffer.alloc(64 * 1024, "7")
      const frame = Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from("\r\n")])
      for (const path of ["/api/v1/contacts/check", "/api/v1/messages/send", "/api/v1/webhook/resend"]) {
        const answer = yield* raw(url, [
          `POST ${path} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${acme.accountKey}\r\n` +
          "content-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n",
          ...Array.from({ length: 40 }, () => frame),
          "0\r\n\r\n"
        ])
        assert.strictEqual(answer.status, 413, path)
        assert.strictEqual(answer.json?.code, "payload_too_large", path)
      }
    }))

  it.effect("an error quotes at most a short prefix of the value it refuses", () =>
    Effect.gen(function*() {
      const { ops } = yield* TestGateway
      const acme = yield* provision(ops)
      const long = yield* call("POST", "/api/v1/webhook/resend", acme.accountKey, { event_id: 1, since: "9".repeat(1_000_000) })
      assert.strictEqual(long.status, 400)
      assert.isBelow(long.length, 1000)
      const many = yield* call("POST", "/api/v1/contacts/check", acme.accountKey, { phone: Array(9000).fill("abcdefghij") })
      assert.strictEqual(codeOf(many), "400 invalid_param")
      assert.isBelow(many.length, 1000)
    }))

  it.effect("Node's own refusals are JSON {error, code}: headers or URL over 16 KiB, malformed requests", () =>
    Effect.gen(function*() {
      const { ops, url } = yield* TestGateway
      const acme = yield* provision(ops)
      const bigHeader = yield* raw(url, [`GET /api/status HTTP/1.1\r\nhost: x\r\nx-big: ${"a".repeat(17 * 1024)}\r\n\r\n`])
      assert.deepStrictEqual([bigHeader.status, bigHeader.json?.code], [431, "headers_too_large"])
      assert.include(bigHeader.headers, "content-type: application/json")
      const longUrl = yield* raw(url, [`GET /api/v1/messages?chat=${"7".repeat(17 * 1024)} HTTP/1.1\r\nhost: x\r\n\r\n`])
      assert.deepStrictEqual([longUrl.status, longUrl.json?.code], [431, "headers_too_large"])
      for (
        const request of [
          "HELLO THERE\r\n\r\n",
          "GET /api/status HTTP/1.1\r\nhost: x\r\nx-nul: a\u0000b\r\n\r\n",
          "POST /api/v1/contacts/check HTTP/1.1\r\nhost: x\r\ncontent-length: 3\r\ntransfer-encoding: chunked\r\n\r\nabc",
          // A malformed chunk is found when the body is read, which is after the key.
          `POST /api/v1/contacts/check HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${acme.accountKey}\r\n` +
          "transfer-encoding: chunked\r\n\r\nzz\r\nabc\r\n"
        ]
      ) {
        const answer = yield* raw(url, [request])
        assert.deepStrictEqual([answer.status, answer.json?.code], [400, "bad_request"], JSON.stringify(request))
      }
    }))

  it.effect("idle keep-alive connections stay open 65 s, longer than load balancers keep theirs", () =>
    Effect.gen(function*() {
      const { url } = yield* TestGateway
      const agent = new Agent({ keepAlive: true })
      const header = yield* Effect.async<unknown>((resume) => {
        get(`${url}/api/status`, { agent }, (response) => {
          response.resume()
          response.on("end", () => resume(Effect.succeed(response.headers["keep-alive"])))
        }).on("error", (error) => resume(Effect.die(error)))
      }).pipe(Effect.ensuring(Effect.sync(() => agent.destroy())))
      assert.strictEqual(header, "timeout=65")
    }))
})

describe("the key comes before the input", () => {
  const ask = (gateway: RunningGateway, method: string, path: string, key: string | undefined, body?: string | Buffer) =>
    Effect.gen(function*() {
      const request = HttpClientRequest.make(method as "POST")(path).pipe(
        key === undefined ? (r) => r : HttpClientRequest.setHeaders({ authorization: `Bearer ${key}` }),
        body === undefined
          ? (r) => r
          : HttpClientRequest.bodyUint8Array(typeof body === "string" ? Buffer.from(body) : body, "application/json")
      )
      const response = yield* gateway.http.execute(request)
      const json: any = yield* Effect.orElseSucceed(response.json, () => undefined)
      return { status: response.status, json, length: 0, retryAfter: response.headers["retry-after"] }
    })

  it.scopedLive("without a valid key, malformed input answers 401, then 429 once the address is blocked; with the key, 400", () =>
    Effect.gen(function*() {
      const time = ManualClock.make(ManualClock.startOfMinute())
      const gateway = yield* startGateway(yield* freshDatabase, { counterClock: time.clock })
      const acme = yield* provision(gateway.ops)
      const wrongKey = "wag_acc_00000000000000000000000000000000"
      const to = uniquePhone()
      // Each: method, path, body (or none), and what the right credentials get.
      const inputs: Array<readonly [string, string, string | Buffer | undefined, string, string]> = [
        ["POST", "/api/v1/messages/send", "garbage", acme.accountKey, "400 invalid_json"],
        ["POST", "/api/v1/contacts/check", "garbage", acme.accountKey, "400 invalid_json"],
        ["POST", "/api/v1/messages/send", nested(33), acme.accountKey, "400 invalid_json"],
        ["POST", "/api/v1/messages/send", nested(10_000), acme.accountKey, "400 invalid_json"],
        ["POST", "/api/v1/messages/send", JSON.stringify({ to, text: "a\u0000b" }), acme.accountKey, "400 invalid_param"],
        ["POST", "/api/v1/messages/send", Buffer.from(`{"to":"${to}","text":"caf\xe9"}`, "latin1"), acme.accountKey, "400 invalid_json"],
        ["GET", "/api/v1/messages?chat=%00", undefined, acme.accountKey, "400 invalid_param"],
        ["POST", `/ops/v1/accounts/${acme.accountId}/credit`, "garbage", OPERATOR_TOKEN, "400 invalid_json"],
        ["GET", `/ops/v1/accounts/${acme.accountId}/ledger?x=%00`, undefined, OPERATOR_TOKEN, "400 invalid_param"],
        ["PUT", "/sim/v1/config", nested(10_000), OPERATOR_TOKEN, "400 invalid_json"]
      ]
      for (const [method, path, body, right, expected] of inputs) {
        const what = `${method} ${path} ${String(body).slice(0, 12)}`
        assert.strictEqual(codeOf(yield* ask(gateway, method, path, undefined, body)), "401 unauthorized", what)
        assert.strictEqual(codeOf(yield* ask(gateway, method, path, wrongKey, body)), "401 invalid_key", what)
        assert.strictEqual(codeOf(yield* ask(gateway, method, path, right, body)), expected, what)
      }
      // The tool server checks its key first as well.
      assert.strictEqual(codeOf(yield* ask(gateway, "POST", "/api/mcp", undefined, nested(10_000))), "401 unauthorized")

      // The address has sent wrong API keys and wrong operator tokens this minute, counted apart
      // (docs/api-decisions.md); from the 30th of each it is blocked.
      const wrongKeys = inputs.filter(([, path]) => path.startsWith("/api/")).length
      for (let i = wrongKeys; i < 29; i++) {
        assert.strictEqual(codeOf(yield* ask(gateway, "GET", "/api/v1/numbers", wrongKey)), "401 invalid_key")
      }
      for (let i = inputs.length - wrongKeys; i < 29; i++) {
        assert.strictEqual(codeOf(yield* ask(gateway, "GET", `/ops/v1/accounts/${acme.accountId}`, wrongKey)), "401 invalid_key")
      }
      for (const [method, path, body] of inputs) {
        const blocked = yield* ask(gateway, method, path, wrongKey, body)
        assert.deepStrictEqual([codeOf(blocked), blocked.retryAfter], ["429 rate_limited", "60"], `${method} ${path}`)
      }
      // The right credentials from the same address still get their input judged.
      for (const [method, path, body, right, expected] of inputs) {
        assert.strictEqual(codeOf(yield* ask(gateway, method, path, right, body)), expected, `${method} ${path}`)
      }
    }), { timeout: 60_000 })
})

describe("slow requests", () => {
  const slowGateway = Effect.flatMap(freshDatabase, (database) =>
    startGateway(database, { settings: { requestTimeoutMs: 1000, headersTimeoutMs: 1000 } }))

  const timedOut = (gateway: RunningGateway, parts: ReadonlyArray<string>, gapMs: number) =>
    Effect.gen(function*() {
      const started = Date.now()
      const answer = yield* raw(gateway.url, parts, gapMs)
      return { ...answer, seconds: (Date.now() - started) / 1000 }
    })

  it.scopedLive("a body or headers trickling in answer 408 request_timeout as JSON after HTTP_REQUEST_TIMEOUT_MS", () =>
    Effect.gen(function*() {
      const gateway = yield* slowGateway
      const acme = yield* provision(gateway.ops)
      const body = yield* timedOut(gateway, [
        `POST /api/v1/contacts/check HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${acme.accountKey}\r\n` +
        "content-type: application/json\r\ncontent-length: 1000\r\n\r\n{",
        ...Array.from({ length: 60 }, () => " ")
      ], 500)
      assert.deepStrictEqual([body.status, body.json?.code], [408, "request_timeout"])
      // Well before Node's 300 s; generous for a busy machine (the check runs every second).
      assert.isBelow(body.seconds, 20)
      const headers = yield* timedOut(gateway, ["GET /api/status HTTP/1.1\r\n", ...Array.from({ length: 60 }, () => "x-a: b\r\n")], 500)
      assert.deepStrictEqual([headers.status, headers.json?.code], [408, "request_timeout"])
      assert.isBelow(headers.seconds, 20)
    }), { timeout: 60_000 })
})
