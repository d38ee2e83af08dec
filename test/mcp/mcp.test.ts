/**
 * The MCP tool server at /api/mcp through the official SDK client over HTTP, against a gateway
 * on the simulated network: the handshake and the tools' schemas, each tool's answer beside the
 * REST answer it mirrors, every refusal as a tool error with its code and retry time, keys and
 * their scoping, the key's request limit, and the Host/Origin checks. The number entities' clock
 * is driven by the test, never by sleeping.
 */
import { assert, describe, it } from "@effect/vitest"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Almaty from "@wagate/domain/Almaty"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { Redis } from "ioredis"
import { linked, provision, uniquePhone } from "../support/Fixtures.js"
import * as ManualClock from "../support/ManualClock.js"
import {
  freshDatabase,
  type GatewayOptions,
  REDIS_URL,
  redisPrefix,
  type RunningGateway,
  sql,
  startGateway
} from "../support/TestGateway.js"
import * as StorageRefusals from "../support/StorageRefusals.js"
import { connect, raw, refusal } from "./McpClient.js"

/** 12:00 in Almaty on a Monday; the numbers are linked at this moment. */
const NOON = Date.parse("2026-11-23T07:00:00.000Z")

const world = (options: GatewayOptions & { readonly numbers?: number } = {}) =>
  Effect.gen(function*() {
    const time = ManualClock.make(NOON)
    const gateway = yield* startGateway(yield* freshDatabase, { domainClock: time.clock, ...options })
    const acme = yield* provision(gateway.ops, { numbers: options.numbers ?? 1 })
    return { gateway, time, acme }
  })

const rest = (gateway: RunningGateway, key: string, method: "GET" | "POST", path: string, body?: unknown) =>
  Effect.gen(function*() {
    const request = (method === "GET" ? HttpClientRequest.get(path) : HttpClientRequest.post(path)).pipe(
      HttpClientRequest.setHeaders({ authorization: `Bearer ${key}` }),
      body === undefined ? (r) => r : HttpClientRequest.bodyUnsafeJson(body)
    )
    const response = yield* gateway.http.execute(request)
    return { status: response.status, body: (yield* response.json) as any }
  }).pipe(Effect.orDie)

/** A `tools/call` message as a client sends it. */
const toolCall = (id: number | string, name: string, args?: unknown) => ({
  jsonrpc: "2.0",
  id,
  method: "tools/call",
  params: args === undefined ? { name } : { name, arguments: args }
})

/** A peer that wrote first, so messages to it are replies, not first contacts. */
const peerWhoWrote = (gateway: RunningGateway, phone: string, key: string) =>
  Effect.gen(function*() {
    const peer = uniquePhone()
    yield* gateway.sim.inbound({ to: phone, from: peer, text: "Hello, do you deliver?" })
    for (let i = 0; i < 200; i++) {
      const { body } = yield* rest(gateway, key, "GET", `/api/v1/messages?chat=${peer}`)
      if (body.messages.length > 0) return peer
      yield* Effect.sleep("10 millis")
    }
    return yield* Effect.dieMessage("the incoming message was not stored")
  })

describe("MCP: handshake and tools", () => {
  it.scopedLive("initializes on the current protocol revision and lists the four tools with input and output schemas", () =>
    Effect.gen(function*() {
      const { acme, gateway } = yield* world()
      const { client, transport } = yield* connect(gateway, acme.accountKey)
      assert.strictEqual(transport.protocolVersion, "2025-11-25")
      assert.strictEqual(client.getServerVersion()?.name, "wagate")
      assert.isDefined(client.getServerCapabilities()?.tools)
      assert.match(client.getInstructions() ?? "", /untrusted/)
      // Stateless: no session to keep, so any api process can answer the next request.
      assert.isUndefined(transport.sessionId)

      const { tools } = yield* Effect.promise(() => client.listTools())
      assert.deepStrictEqual(tools.map((t) => t.name), ["send_message", "get_status", "get_limits", "check_number"])
      for (const tool of tools) {
        assert.strictEqual(tool.inputSchema.type, "object")
        assert.strictEqual(tool.outputSchema?.type, "object")
        assert.isAbove(tool.description?.length ?? 0, 200, tool.name)
        assert.notInclude(JSON.stringify(tool), "$ref")
      }
      const send = tools[0]
      assert.deepStrictEqual(send.inputSchema.required, ["to"])
      assert.deepStrictEqual(
        Object.keys(send.inputSchema.properties ?? {}),
        ["to", "text", "image", "document", "voice", "video", "from", "idempotency_key"]
      )
      assert.strictEqual((send.inputSchema.properties as any).text.maxLength, 4096)
      assert.deepStrictEqual(tools[3].inputSchema.required, ["phone"])
      assert.deepStrictEqual((tools[2].outputSchema as any).required, [
        "rating", "tier", "tier_title", "enough_data", "limits", "used", "cold_blocked_until", "warmup", "paused", "pause_reason"
      ])
      assert.isTrue(tools[1].annotations?.readOnlyHint)
      assert.isFalse(tools[0].annotations?.readOnlyHint)
      // Each description names every code its tool can be refused with.
      const fromCodes = ["from_required", "invalid_from", "number_not_found", "no_numbers"]
      const codes: Record<string, ReadonlyArray<string>> = {
        send_message: [
          "rate_limited", "daily_limit", "new_contacts_limit", "cold_blocked", "spam_detected", "number_paused",
          "not_connected", "invalid_to", "empty_text", "text_too_long", "invalid_media", "invalid_param", ...fromCodes,
          "media_fetch_failed", "media_too_large", "send_failed", "capacity", "busy", "attachments_busy", "key_rate_limited"
        ],
        get_status: ["key_rate_limited"],
        get_limits: [...fromCodes, "key_rate_limited"],
        check_number: [
          "rate_limited", "daily_limit", "not_connected", "number_paused", "invalid_param", ...fromCodes, "key_rate_limited"
        ]
      }
      for (const tool of tools) {
        for (const code of codes[tool.name]) assert.match(tool.description ?? "", new RegExp(`\\b${code}\\b`), `${tool.name} ${code}`)
      }
    }))

  it.scopedLive("an unknown tool is a protocol error (invalid params); GET and DELETE answer 405", () =>
    Effect.gen(function*() {
      const { acme, gateway } = yield* world()
      const { client } = yield* connect(gateway, acme.accountKey)
      const unknown = yield* Effect.either(Effect.tryPromise(() => client.callTool({ name: "delete_everything", arguments: {} })))
      assert.isTrue(unknown._tag === "Left")
      assert.strictEqual(
        unknown._tag === "Left" && (unknown.left.cause as Error).message,
        "MCP error -32602: Unknown tool: delete_everything"
      )
      const auth = { authorization: `Bearer ${acme.accountKey}` }
      const onWire = yield* raw(gateway, { headers: auth, body: toolCall(1, "nope", {}) })
      assert.deepStrictEqual(onWire.body.error, { code: -32602, message: "Unknown tool: nope" })
      for (const method of ["GET", "DELETE"]) {
        const answer = yield* raw(gateway, { method, headers: auth })
        assert.deepStrictEqual([answer.status, answer.body.code, answer.headers.allow], [405, "method_not_allowed", "POST"])
      }
    }))
})

describe("MCP: malformed requests", () => {
  it.scopedLive("params their method's schema refuses are invalid params (-32602) naming what is wrong, never an internal error", () =>
    Effect.gen(function*() {
      const { acme, gateway } = yield* world()
      const headers = { authorization: `Bearer ${acme.accountKey}`, "mcp-protocol-version": "2025-11-25" }
      const cases: Array<[object, RegExp]> = [
        [{ jsonrpc: "2.0", id: 1, method: "tools/call" }, /^Invalid params: params: /],
        [{ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: 5 } }, /^Invalid params: params\.name: /],
        [{ jsonrpc: "2.0", id: 1, method: "tools/call", params: { arguments: {} } }, /^Invalid params: params\.name: /],
        [{ jsonrpc: "2.0", id: 1, method: "initialize" }, /^Invalid params: params: /],
        [
          { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 42, capabilities: {}, clientInfo: { name: "x", version: "1" } } },
          /^Invalid params: params\.protocolVersion: /
        ],
        [{ jsonrpc: "2.0", id: 1, method: "tools/list", params: { cursor: 7 } }, /^Invalid params: params\.cursor: /]
      ]
      for (const [body, message] of cases) {
        const answer = yield* raw(gateway, { headers, body })
        assert.deepStrictEqual([answer.status, answer.body.id, answer.body.error?.code], [200, 1, -32602], JSON.stringify(body))
        assert.match(answer.body.error.message, message, JSON.stringify(body))
      }
      // In a batch (2025-03-26) only that request is refused; the others are answered beside it.
      const batch = yield* raw(gateway, {
        headers: { authorization: `Bearer ${acme.accountKey}` },
        body: [{ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: 5 } }, toolCall(2, "get_status", {})]
      })
      const byId = new Map<unknown, any>(batch.body.map((a: any) => [a.id, a]))
      assert.strictEqual(byId.get(1).error.code, -32602)
      assert.deepStrictEqual(byId.get(2).result.structuredContent.numbers.map((n: any) => n.id), [acme.numbers[0].id])
    }))

  it.scopedLive("a tool call asking to run as a task is method not found (-32601): no tool offers tasks", () =>
    Effect.gen(function*() {
      const { acme, gateway } = yield* world()
      const headers = { authorization: `Bearer ${acme.accountKey}`, "mcp-protocol-version": "2025-11-25" }
      const { tools } = (yield* raw(gateway, { headers, body: { jsonrpc: "2.0", id: 1, method: "tools/list" } })).body.result
      for (const tool of tools) assert.isUndefined(tool.execution, tool.name)
      const asTask = { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "get_status", arguments: {}, task: { ttl: 60_000 } } }
      const answer = yield* raw(gateway, { headers, body: asTask })
      assert.deepStrictEqual([answer.status, answer.body.id, answer.body.error?.code], [200, 2, -32601])
      assert.match(answer.body.error.message, /get_status cannot run as a task/)
    }))

  it.scopedLive("a body that is not JSON, not UTF-8 or nested deeper than 32 levels is a JSON-RPC parse error (-32700, 400); too large a body 413", () =>
    Effect.gen(function*() {
      const { acme, gateway } = yield* world()
      const headers = { authorization: `Bearer ${acme.accountKey}`, "mcp-protocol-version": "2025-11-25" }
      const nest = (levels: number) => "[".repeat(levels) + "]".repeat(levels)
      // The body, params and arguments are three levels: x's arrays may add 29 more.
      const call = (x: string) =>
        `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_status","arguments":{"x":${x}}}}`
      const parseError = (message: string) => ({ jsonrpc: "2.0", id: null, error: { code: -32700, message } })
      const cases: Array<readonly [string | Buffer, string]> = [
        ["{", "Parse error: Request body is not valid JSON"],
        ["", "Parse error: Request body is not valid JSON"],
        [Buffer.from(call(`"caf\xe9"`), "latin1"), "Parse error: The body is not valid UTF-8; send JSON encoded in UTF-8"],
        [call(nest(30)), "Parse error: The body nests deeper than 32 levels"],
        [call(nest(10_000)), "Parse error: The body nests deeper than 32 levels"]
      ]
      for (const [bytes, message] of cases) {
        const answer = yield* raw(gateway, { headers, bytes })
        assert.deepStrictEqual([answer.status, answer.body], [400, parseError(message)], String(bytes).slice(0, 90))
      }
      // 32 levels are taken: the call is answered, its unknown argument refused as its tool error.
      const deepest = yield* raw(gateway, { headers, bytes: call(nest(29)) })
      assert.deepStrictEqual([deepest.status, deepest.body.id, deepest.body.result?.isError], [200, 1, true])

      // The SDK's client reads the parse error from its transport error, and goes on.
      const { call: callTool, client } = yield* connect(gateway, acme.accountKey)
      const refused = yield* Effect.flip(Effect.tryPromise(() =>
        client.callTool({ name: "send_message", arguments: { x: JSON.parse(nest(40)) } })
      ))
      const transportError = refused.cause as Error & { code?: number }
      assert.strictEqual(transportError.code, 400)
      assert.deepStrictEqual(
        JSON.parse(transportError.message.slice(transportError.message.indexOf("{"))),
        parseError("Parse error: The body nests deeper than 32 levels")
      )
      assert.isUndefined((yield* callTool("get_status")).isError)

      // Too large a body is refused before it is parsed, announced or chunked.
      const big = call(`"${"7".repeat(1024 * 1024)}"`)
      const framings: Array<Record<string, string>> = [{}, { "transfer-encoding": "chunked" }]
      for (const extra of framings) {
        const answer = yield* raw(gateway, { headers: { ...headers, ...extra }, bytes: big })
        assert.deepStrictEqual([answer.status, answer.body.code], [413, "payload_too_large"], JSON.stringify(extra))
      }
    }))
  it.scopedLive("JSON that is no JSON-RPC message is an invalid request (-32600, 400) saying what is wrong; in a batch only that value, the others run", () =>
    Effect.gen(function*() {
      const { acme, gateway } = yield* world()
      const headers = { authorization: `Bearer ${acme.accountKey}`, "mcp-protocol-version": "2025-11-25" }
      const cases: Array<readonly [unknown, RegExp]> = [
        [{ hello: "world" }, /^Invalid Request: a message has a method .*, or a result or an error/],
        [42, /^Invalid Request: a message is a JSON object$/],
        [{ jsonrpc: "1.0", id: 1, method: "ping" }, /^Invalid Request: jsonrpc: .*"2\.0"/],
        [{ jsonrpc: "2.0", id: 1.5, method: "ping" }, /^Invalid Request: id: /],
        [{ jsonrpc: "2.0", id: 1, method: "ping", priority: "high" }, /^Invalid Request: .*"priority"/],
        [{ jsonrpc: "2.0", id: 1, method: "tools/call", params: "get_status" }, /^Invalid Request: params: /]
      ]
      for (const [body, why] of cases) {
        const answer = yield* raw(gateway, { headers, body })
        assert.deepStrictEqual(
          { status: answer.status, jsonrpc: answer.body.jsonrpc, id: answer.body.id, code: answer.body.error?.code },
          { status: 400, jsonrpc: "2.0", id: null, code: -32600 },
          JSON.stringify(body)
        )
        assert.match(answer.body.error.message, why, JSON.stringify(body))
      }
      // In a batch (2025-03-26) each such value gets its own answer; the messages beside it run.
      const batch = yield* raw(gateway, {
        headers: { authorization: `Bearer ${acme.accountKey}` },
        body: [{ hello: "world" }, toolCall(1, "get_status", {}), 7, { jsonrpc: "2.0", id: "p", method: "ping" }]
      })
      assert.strictEqual(batch.status, 200)
      assert.deepStrictEqual(
        batch.body.filter((a: any) => a.id === null).map((a: any) => a.error.code),
        [-32600, -32600]
      )
      const byId = new Map<unknown, any>(batch.body.map((a: any) => [a.id, a]))
      assert.deepStrictEqual(byId.get(1).result.structuredContent.numbers.map((n: any) => n.id), [acme.numbers[0].id])
      assert.deepStrictEqual(byId.get("p").result, {})
      // A batch of nothing but such values runs nothing: each is answered, with 400.
      const none = yield* raw(gateway, { headers: { authorization: `Bearer ${acme.accountKey}` }, body: [1, "two"] })
      assert.deepStrictEqual(
        [none.status, none.body.map((a: any) => [a.id, a.error.code])],
        [400, [[null, -32600], [null, -32600]]]
      )
    }))
})

describe("MCP: tools answer as the REST API does", () => {
  it.scopedLive("send_message sends through the number's entity: source mcp, quota, the message reaches the network; idempotency_key sends once", () =>
    Effect.gen(function*() {
      const { acme, gateway, time } = yield* world()
      const mcp = yield* connect(gateway, acme.accountKey)
      const to = uniquePhone()
      const result = yield* mcp.call("send_message", { to, text: "Your order is ready" })
      assert.isUndefined(result.isError)
      const sent = result.structuredContent
      assert.deepStrictEqual(Object.keys(sent).sort(), ["from", "id", "ok", "quota", "wa_message_id"])
      assert.deepStrictEqual(sent.from, { id: acme.numbers[0].id, phone: acme.numbers[0].phone })
      // Warm-up: 200 messages a day, one used.
      assert.deepStrictEqual(sent.quota, { limit: 200, remaining: 199, reset: Almaty.nextMidnight(NOON) / 1000 })
      assert.match(result.content[0].text!, /199 of 200 messages left today/)
      assert.deepStrictEqual(JSON.parse(result.content[1].text!), sent)
      const network = yield* gateway.sim.sent({ to })
      assert.deepStrictEqual(network.map((m) => [m.from, m.text, m.waMessageId]), [
        [acme.numbers[0].phone, "Your order is ready", sent.wa_message_id]
      ])
      const stored = yield* rest(gateway, acme.accountKey, "GET", `/api/v1/messages/${sent.id}`)
      assert.deepStrictEqual([stored.body.source, stored.body.direction, stored.body.text], ["mcp", "out", "Your order is ready"])

      // The same key and arguments answer the first send again; nothing more reaches the network.
      const peer = yield* peerWhoWrote(gateway, acme.numbers[0].phone, acme.accountKey)
      time.adjust("1 second")
      const first = yield* mcp.call("send_message", { to: peer, text: "Parcel left", idempotency_key: "order-42" })
      time.adjust("1 second")
      const again = yield* mcp.call("send_message", { to: peer, text: "Parcel left", idempotency_key: "order-42" })
      assert.strictEqual(again.structuredContent.id, first.structuredContent.id)
      // The replay tells the number's allowance now (counting nothing), as the REST replay's
      // X-RateLimit-* headers do.
      const allowance = { limit: 200, remaining: 198, reset: Almaty.nextMidnight(NOON) / 1000 }
      assert.deepStrictEqual(again.structuredContent.quota, allowance)
      assert.match(again.content[0].text!, /198 of 200 messages left today/)
      assert.strictEqual((yield* gateway.sim.sent({ to: peer })).length, 1)
      // The key is the account's, whichever surface used it first.
      const viaRest = yield* gateway.http.execute(HttpClientRequest.post("/api/v1/messages/send").pipe(
        HttpClientRequest.setHeaders({ authorization: `Bearer ${acme.accountKey}`, "idempotency-key": "order-42" }),
        HttpClientRequest.bodyUnsafeJson({ to: peer, text: "Parcel left" })
      ))
      assert.strictEqual(((yield* viaRest.json) as any).id, first.structuredContent.id)
      assert.deepStrictEqual(
        ["limit", "remaining", "reset"].map((name) => Number(viaRest.headers[`x-ratelimit-${name}`])),
        [allowance.limit, allowance.remaining, allowance.reset]
      )
      const reused = refusal(yield* mcp.call("send_message", { to: peer, text: "Other text", idempotency_key: "order-42" }))
      // Through MCP the refusal names the argument the agent passed, through REST the header.
      assert.deepStrictEqual(reused, { code: "invalid_param", error: "This idempotency_key was used for another request" })
      const spaced = refusal(yield* mcp.call("send_message", { to: peer, text: "x", idempotency_key: "has space" }))
      assert.deepStrictEqual(spaced, { code: "invalid_param", error: "idempotency_key must be 1 to 255 printable characters" })
      const reusedViaRest = yield* gateway.http.execute(HttpClientRequest.post("/api/v1/messages/send").pipe(
        HttpClientRequest.setHeaders({ authorization: `Bearer ${acme.accountKey}`, "idempotency-key": "order-42" }),
        HttpClientRequest.bodyUnsafeJson({ to: peer, text: "Other text" })
      ))
      assert.deepStrictEqual(
        [reusedViaRest.status, yield* reusedViaRest.json],
        [400, { code: "invalid_param", error: "This Idempotency-Key was used for another request" }]
      )
      assert.notInclude(JSON.stringify([result, first, again, reused]), acme.accountKey)
    }))

  it.scopedLive("get_status, get_limits and check_number carry the REST answers as structured content", () =>
    Effect.gen(function*() {
      const { acme, gateway, time } = yield* world({ numbers: 2 })
      const mcp = yield* connect(gateway, acme.accountKey)
      const status = yield* mcp.call("get_status")
      assert.deepStrictEqual(status.structuredContent, (yield* rest(gateway, acme.accountKey, "GET", "/api/v1/status")).body)
      assert.strictEqual(status.structuredContent.numbers.length, 2)
      assert.isDefined(status.structuredContent.balance)
      assert.match(status.content[0].text!, new RegExp(`${acme.numbers[0].phone} \\(id ${acme.numbers[0].id}\\) WORKING`))

      const limits = yield* mcp.call("get_limits", { from: acme.numbers[1].id })
      const restLimits = yield* rest(gateway, acme.accountKey, "GET", `/api/v1/limits?from=${acme.numbers[1].id}`)
      assert.deepStrictEqual(limits.structuredContent, restLimits.body)
      assert.isTrue(limits.structuredContent.warmup)
      assert.match(limits.content[0].text!, /warm-up/)

      const absent = uniquePhone()
      yield* gateway.sim.setPhone(absent, false)
      const present = yield* mcp.call("check_number", { phone: `+${acme.numbers[1].phone}`, from: acme.numbers[0].phone })
      assert.deepStrictEqual(present.structuredContent, {
        phone: acme.numbers[1].phone,
        exists: true,
        chat_id: `${acme.numbers[1].phone}@c.us`,
        quota: { limit: 200, remaining: 199, reset: present.structuredContent.quota.reset }
      })
      time.adjust("1 second")
      const missing = yield* mcp.call("check_number", { phone: absent, from: acme.numbers[0].id })
      assert.deepStrictEqual([missing.structuredContent.exists, missing.structuredContent.quota.remaining], [false, 198])
      assert.match(missing.content[0].text!, /is not on WhatsApp/)
    }))
})

describe("MCP: refusals are tool errors with the spec's code and retry time", () => {
  it.scopedLive("bad input: the REST body rules, each with its code; unknown arguments are refused", () =>
    Effect.gen(function*() {
      const { acme, gateway } = yield* world({ numbers: 2 })
      const mcp = yield* connect(gateway, acme.accountKey)
      const to = uniquePhone()
      const from = acme.numbers[0].id
      const cases: Array<[string, Record<string, unknown>, string]> = [
        ["send_message", { text: "no recipient", from }, "invalid_to"],
        ["send_message", { to: "hello", text: "x", from }, "invalid_to"],
        ["send_message", { to, from }, "empty_text"],
        ["send_message", { to, text: "   ", from }, "empty_text"],
        ["send_message", { to, text: "x".repeat(4097), from }, "text_too_long"],
        ["send_message", { to, image: { url: "ftp://x/a.png" }, from }, "invalid_media"],
        ["send_message", { to, image: { url: "http://x/a.png" }, video: { url: "http://x/b.mp4" }, from }, "invalid_media"],
        ["send_message", { to, text: 5, from }, "invalid_param"],
        ["send_message", { to, message: "typo", from }, "invalid_param"],
        ["send_message", { to, image: { url: "http://x/a.png", foo: 1 }, from }, "invalid_param"],
        ["send_message", { to, document: { url: "http://x/a.pdf", filename: "a.pdf", name: "b.pdf" }, from }, "invalid_param"],
        ["get_status", { toString: 1 }, "invalid_param"],
        ["send_message", { to, text: "x" }, "from_required"],
        ["send_message", { to, text: "x", from: "abc" }, "invalid_from"],
        ["send_message", { to, text: "x", from: 999_999 }, "number_not_found"],
        ["send_message", { to, text: "x", from, idempotency_key: "has space" }, "invalid_param"],
        ["get_limits", {}, "from_required"],
        ["get_limits", { from: true }, "invalid_from"],
        ["check_number", { phone: "12", from }, "invalid_param"],
        ["check_number", { from }, "invalid_param"]
      ]
      for (const [tool, args, expected] of cases) {
        const result = yield* mcp.call(tool, args)
        const body = refusal(result)
        assert.strictEqual(body.code, expected, `${tool} ${JSON.stringify(args).slice(0, 60)}`)
        assert.isString(body.error)
        assert.isUndefined(result.structuredContent)
        assert.match(result.content[0].text!, new RegExp(`^Refused \\(${expected}\\)`))
      }
      // Unknown properties are refused at every level the input schema closes, the same way.
      const nested = refusal(yield* mcp.call("send_message", { to, image: { url: "http://x/a.png", foo: 1 }, from }))
      assert.strictEqual(nested.error, `send_message takes no argument "image.foo"`)
      assert.strictEqual((yield* gateway.sim.sent()).length, 0)
    }))

  it.scopedLive("arguments that are no object are refused as bad arguments (invalid_param); null is no arguments", () =>
    Effect.gen(function*() {
      const { acme, gateway } = yield* world()
      const headers = { authorization: `Bearer ${acme.accountKey}` }
      for (const [tool, args] of [["send_message", []], ["send_message", "to 77011234567"], ["check_number", 5], ["get_status", [1]]] as const) {
        const answer = yield* raw(gateway, { headers, body: toolCall(7, tool, args) })
        assert.strictEqual(answer.status, 200, `${tool} ${JSON.stringify(args)}`)
        assert.deepStrictEqual(
          [answer.body.id, refusal(answer.body.result)],
          [7, { code: "invalid_param", error: `${tool} takes its arguments as an object` }],
          `${tool} ${JSON.stringify(args)}`
        )
      }
      const none = yield* raw(gateway, { headers, body: toolCall(8, "get_status", null) })
      assert.deepStrictEqual(none.body.result.structuredContent.numbers.map((n: any) => n.id), [acme.numbers[0].id])
      // The tool is looked at first: an unknown one stays a protocol error.
      const unknown = yield* raw(gateway, { headers, body: toolCall(9, "nope", "x") })
      assert.deepStrictEqual(unknown.body.error, { code: -32602, message: "Unknown tool: nope" })
      assert.strictEqual((yield* gateway.sim.sent()).length, 0)
    }))

  it.scopedLive("text that cannot be stored (U+0000, an unpaired surrogate) is that call's tool error, coded as REST codes it", () =>
    Effect.gen(function*() {
      const { acme, gateway } = yield* world()
      const mcp = yield* connect(gateway, acme.accountKey)
      const to = uniquePhone()
      const from = acme.numbers[0].id
      const cases: Array<[string, Record<string, unknown>, string, string]> = [
        ["send_message", { to, text: "a\u0000b", from }, "invalid_param", "text"],
        ["send_message", { to, text: "cut emoji \ud83d", from }, "invalid_param", "text"],
        ["send_message", { to, image: { url: "https://example.com/a.png", caption: "\udc00" }, from }, "invalid_param", "image.caption"],
        ["get_limits", { from: "7701\u0000" }, "invalid_from", "from"],
        ["check_number", { phone: "7701234567\u0000" }, "invalid_param", "phone"]
      ]
      for (const [tool, args, code, argument] of cases) {
        const body = refusal(yield* mcp.call(tool, args))
        assert.deepStrictEqual(
          body,
          { code, error: `${argument} holds U+0000 or an unpaired UTF-16 surrogate, which cannot be stored` },
          `${tool} ${argument}`
        )
      }
      // The REST API refuses the same body with the same code and sentence.
      const viaRest = yield* rest(gateway, acme.accountKey, "POST", "/api/v1/messages/send", { to, text: "a\u0000b", from })
      const viaMcp = refusal(yield* mcp.call("send_message", { to, text: "a\u0000b", from }))
      assert.deepStrictEqual([viaRest.status, viaRest.body.code, viaRest.body.error], [400, viaMcp.code, viaMcp.error])
      // In a batch only that call is refused; the others run.
      const answer = yield* raw(gateway, {
        headers: { authorization: `Bearer ${acme.accountKey}`, "mcp-protocol-version": "2025-03-26" },
        body: [toolCall(1, "check_number", { phone: "\u0000" }), toolCall(2, "get_status", {})]
      })
      const byId = new Map<unknown, any>(answer.body.map((a: any) => [a.id, a]))
      assert.strictEqual(refusal(byId.get(1).result).code, "invalid_param")
      assert.deepStrictEqual(byId.get(2).result.structuredContent.numbers.map((n: any) => n.id), [from])
      assert.strictEqual((yield* gateway.sim.sent()).length, 0)
    }))

  it.scopedLive("rate_limited (1 a second, the 5 s pause before a first message), number_paused, not_connected", () =>
    Effect.gen(function*() {
      const { acme, gateway, time } = yield* world({ numbers: 2 })
      const [n1, n2] = acme.numbers
      const mcp = yield* connect(gateway, acme.accountKey)
      const peer = yield* peerWhoWrote(gateway, n1.phone, acme.accountKey)
      assert.isUndefined((yield* mcp.call("send_message", { to: peer, text: "one", from: n1.id })).isError)
      const fast = refusal(yield* mcp.call("send_message", { to: peer, text: "two", from: n1.id }))
      assert.deepStrictEqual([fast.code, fast.retry_after_seconds], ["rate_limited", 1])
      const retryIn = Date.parse(fast.retry_at!) - Date.now()
      assert.isTrue(retryIn > 0 && retryIn <= 1000, `retry_at ${fast.retry_at}`)
      time.adjust("1 second")
      assert.isUndefined((yield* mcp.call("send_message", { to: uniquePhone(), text: "hi", from: n1.id })).isError)
      time.adjust("1500 millis")
      const pause = refusal(yield* mcp.call("send_message", { to: uniquePhone(), text: "hi", from: n1.id }))
      assert.deepStrictEqual([pause.code, pause.retry_after_seconds], ["rate_limited", 4])

      yield* gateway.ops.ops.pause({ path: { id: n1.id }, payload: { paused: true } })
      const paused = refusal(yield* mcp.call("send_message", { to: peer, text: "x", from: n1.id }))
      assert.deepStrictEqual(
        [paused.code, paused.retry_after_seconds, paused.error],
        ["number_paused", undefined, "The number is paused by the operator"]
      )
      assert.strictEqual(refusal(yield* mcp.call("check_number", { phone: peer, from: n1.id })).code, "number_paused")
      const status = yield* mcp.call("get_status")
      assert.match(status.content[0].text!, new RegExp(`${n1.phone} \\(id ${n1.id}\\) WORKING, paused by the operator`))
      const limits = yield* mcp.call("get_limits", { from: n1.id })
      assert.deepStrictEqual([limits.structuredContent.paused, limits.structuredContent.pause_reason], [true, "operator"])
      assert.match(limits.content[0].text!, /^Trust index \d+ \([^)]+\), warm-up, paused by the operator\. Used today/)

      yield* gateway.sim.disconnect(n2.phone, "logged_out")
      yield* linked(gateway.ops, n2.id, "STOPPED")
      assert.strictEqual(refusal(yield* mcp.call("send_message", { to: peer, text: "x", from: n2.id })).code, "not_connected")
    }))

  it.scopedLive("new_contacts_limit while the network restricts first messages, retry time included; replies still go", () =>
    Effect.gen(function*() {
      const { acme, gateway, time } = yield* world()
      const mcp = yield* connect(gateway, acme.accountKey)
      const peer = yield* peerWhoWrote(gateway, acme.numbers[0].phone, acme.accountKey)
      yield* gateway.sim.restrict(acme.numbers[0].phone, { reason: "463: account restricted", until: time.now() + 2 * 3_600_000 })
      let refused = yield* mcp.call("send_message", { to: uniquePhone(), text: "hello" })
      for (let i = 0; i < 100 && refused.isError !== true; i++) {
        yield* Effect.sleep("10 millis")
        time.adjust("5 seconds")
        refused = yield* mcp.call("send_message", { to: uniquePhone(), text: "hello" })
      }
      const body = refusal(refused)
      assert.strictEqual(body.code, "new_contacts_limit")
      assert.isAtMost(body.retry_after_seconds!, 7200)
      assert.isAbove(body.retry_after_seconds!, 7000)
      time.adjust("1 second")
      assert.isUndefined((yield* mcp.call("send_message", { to: peer, text: "we are here" })).isError)
    }))

  it.scopedLive("spam_detected with retry 86400, then cold_blocked until the suspension ends", () =>
    Effect.gen(function*() {
      const { acme, gateway, time } = yield* world()
      const mcp = yield* connect(gateway, acme.accountKey)
      time.adjust("4 days")
      for (let i = 0; i < 24; i++) {
        const sent = yield* mcp.call("send_message", { to: uniquePhone(), text: "BIG SALE today only!" })
        assert.isUndefined(sent.isError, `send ${i}`)
        time.adjust("5 seconds")
      }
      const spam = refusal(yield* mcp.call("send_message", { to: uniquePhone(), text: "big sale, today only" }))
      assert.deepStrictEqual([spam.code, spam.retry_after_seconds], ["spam_detected", 86_400])
      time.adjust("10 seconds")
      const blocked = refusal(yield* mcp.call("send_message", { to: uniquePhone(), text: "something else" }))
      assert.deepStrictEqual([blocked.code, blocked.retry_after_seconds], ["cold_blocked", 86_400 - 10])
      const limits = yield* mcp.call("get_limits")
      assert.isString(limits.structuredContent.cold_blocked_until)
      assert.match(limits.content[0].text!, /suspended until/)
    }), { timeout: 60_000 })

  it.scopedLive("daily_limit on checks: retry at midnight in Almaty", () =>
    Effect.gen(function*() {
      const { acme, gateway, time } = yield* world()
      const mcp = yield* connect(gateway, acme.accountKey)
      for (let i = 0; i < 200; i++) {
        const checked = yield* mcp.call("check_number", { phone: uniquePhone() })
        assert.isUndefined(checked.isError, `check ${i}`)
        time.adjust("1 second")
      }
      const refused = refusal(yield* mcp.call("check_number", { phone: uniquePhone() }))
      assert.deepStrictEqual([refused.code, refused.retry_after_seconds], ["daily_limit", Almaty.secondsToMidnight(time.now())])
    }), { timeout: 120_000 })
})

describe("MCP: a storage failure", () => {
  it.scopedLive("refuses the call by its kind, as the REST API answers the same read: capacity with its retry time, or internal_error", () =>
    Effect.gen(function*() {
      const database = yield* freshDatabase
      const gateway = yield* startGateway(database)
      const acme = yield* provision(gateway.ops)
      const mcp = yield* connect(gateway, acme.accountKey)
      // Reads of the balances (the balance get_status shows) fail with the SQLSTATE the test
      // chooses: a view over `refused()` stands in for the table.
      const refusals = yield* StorageRefusals.install(database)
      yield* sql(database, (sql) =>
        Effect.all([
          sql`ALTER TABLE account_balances RENAME TO account_balances_kept`,
          sql`CREATE VIEW account_balances AS SELECT * FROM account_balances_kept WHERE refused()`
        ], { discard: true })
      )
      const cases: ReadonlyArray<readonly [sqlstate: string, status: number, code: string, retry: number | undefined]> = [
        ["57P01", 503, "capacity", 5], // admin_shutdown: the database is restarting
        ["40001", 503, "capacity", 1], // serialization_failure
        ["42703", 500, "internal_error", undefined] // undefined_column: a bug of the gateway
      ]
      for (const [sqlstate, status, code, retry] of cases) {
        yield* refusals.refuseWith(sqlstate)
        const refused = refusal(yield* mcp.call("get_status"))
        assert.deepStrictEqual([refused.code, refused.retry_after_seconds], [code, retry], sqlstate)
        assert.notInclude(refused.error, "refused by the test", sqlstate)
        const answer = yield* rest(gateway, acme.accountKey, "GET", "/api/v1/status")
        assert.deepStrictEqual([answer.status, answer.body.code], [status, code], sqlstate)
      }
      yield* refusals.accept
      const status = yield* mcp.call("get_status")
      assert.notStrictEqual(status.isError, true)
      assert.deepStrictEqual(status.structuredContent, (yield* rest(gateway, acme.accountKey, "GET", "/api/v1/status")).body)
    }))
})

describe("MCP: keys", () => {
  it.scopedLive("a missing or wrong key is refused with 401 {error, code} before any MCP exchange; 30 wrong keys a minute give 429", () =>
    Effect.gen(function*() {
      const time = ManualClock.make(ManualClock.startOfMinute())
      const gateway = yield* startGateway(yield* freshDatabase, { counterClock: time.clock })
      const missing = yield* raw(gateway)
      assert.deepStrictEqual([missing.status, missing.body], [401, { error: missing.body.error, code: "unauthorized" }])
      assert.match(String(missing.headers["www-authenticate"]), /^Bearer/)
      const wrong = yield* raw(gateway, { headers: { authorization: "Bearer wag_acc_wrong" } })
      assert.deepStrictEqual([wrong.status, wrong.body.code], [401, "invalid_key"])
      // The SDK's client cannot even initialize with a wrong key.
      const sdk = yield* Effect.exit(Effect.scoped(connect(gateway, "wag_acc_wrong")))
      assert.isTrue(Exit.isFailure(sdk) && /invalid_key/.test(Cause.pretty(sdk.cause)))
      let last = wrong
      for (let i = 0; i < 30; i++) last = yield* raw(gateway, { headers: { authorization: "Bearer wag_acc_wrong" } })
      assert.deepStrictEqual([last.status, last.body.code, last.headers["retry-after"]], [429, "rate_limited", "60"])
    }))

  it.scopedLive("a number key sees and acts for its own number only", () =>
    Effect.gen(function*() {
      const { acme, gateway } = yield* world({ numbers: 2 })
      const [n1, n2] = acme.numbers
      const mcp = yield* connect(gateway, acme.numberKeys[0])
      const status = yield* mcp.call("get_status")
      assert.deepStrictEqual(status.structuredContent.numbers.map((n: any) => n.id), [n1.id])
      assert.isUndefined(status.structuredContent.balance)
      const limits = yield* mcp.call("get_limits")
      assert.isUndefined(limits.isError)
      assert.strictEqual(refusal(yield* mcp.call("get_limits", { from: n2.id })).code, "number_not_found")
      assert.strictEqual(refusal(yield* mcp.call("send_message", { to: uniquePhone(), text: "x", from: n2.id })).code, "number_not_found")
      assert.strictEqual(refusal(yield* mcp.call("check_number", { phone: uniquePhone(), from: n2.phone })).code, "number_not_found")
      const sent = yield* mcp.call("send_message", { to: uniquePhone(), text: "from my number" })
      assert.strictEqual(sent.structuredContent.from.id, n1.id)
    }))

  it.scopedLive("the key's 3000 requests a minute count MCP and REST together: a tool call over it is a tool error, other messages 429", () =>
    Effect.gen(function*() {
      const database = yield* freshDatabase
      const prefix = redisPrefix()
      const time = ManualClock.make(ManualClock.startOfMinute())
      const gateway = yield* startGateway(database, { redisPrefix: prefix, counterClock: time.clock })
      const acme = yield* provision(gateway.ops)
      const [{ id: keyId }] = (yield* gateway.ops.ops.showAccount({ path: { id: acme.accountId } })).keys
      // 2997 requests already counted this minute (a burst of them takes too long on a busy machine;
      // the REST tests fire the real 3000): one REST request and the MCP handshake (initialize,
      // initialized) make 3000, so the next request of either kind is over the limit.
      const redis = new Redis(REDIS_URL)
      yield* Effect.addFinalizer(() => Effect.promise(() => redis.quit()))
      yield* Effect.promise(() => redis.set(`${prefix}:rl:key:${keyId}:${Math.floor(time.now() / 60_000)}`, 2997, "PX", 120_000))
      const headers = { authorization: `Bearer ${acme.accountKey}` }
      assert.strictEqual((yield* gateway.http.get("/api/v1/numbers", { headers })).status, 200)
      const mcp = yield* connect(gateway, acme.accountKey)
      const over = refusal(yield* mcp.call("get_status"))
      assert.deepStrictEqual([over.code, over.retry_after_seconds], ["key_rate_limited", 60])
      const list = yield* Effect.either(Effect.tryPromise(() => mcp.client.listTools()))
      assert.isTrue(list._tag === "Left" && /key_rate_limited/.test(String(list.left.cause)), String(list._tag === "Left" && list.left.cause))
      const plain = yield* raw(gateway, { headers })
      assert.deepStrictEqual([plain.status, plain.body.code, plain.headers["retry-after"]], [429, "key_rate_limited", "60"])
      assert.strictEqual((yield* gateway.http.get("/api/v1/numbers", { headers })).status, 429)
      // Other keys are not affected; the next minute the key works again.
      const other = yield* connect(gateway, acme.numberKeys[0])
      assert.isUndefined((yield* other.call("get_status")).isError)
      time.adjust("60 seconds")
      assert.isUndefined((yield* mcp.call("get_status")).isError)
    }))
})

describe("MCP: JSON-RPC batches", () => {
  /** An account key whose request counter of this minute the test reads and sets in Redis. */
  const countedKey = Effect.gen(function*() {
    const prefix = redisPrefix()
    const time = ManualClock.make(ManualClock.startOfMinute())
    const gateway = yield* startGateway(yield* freshDatabase, { redisPrefix: prefix, counterClock: time.clock })
    const acme = yield* provision(gateway.ops)
    const [{ id: keyId }] = (yield* gateway.ops.ops.showAccount({ path: { id: acme.accountId } })).keys
    const redis = new Redis(REDIS_URL)
    yield* Effect.addFinalizer(() => Effect.promise(() => redis.quit()))
    return { acme, gateway, redis, time, counter: `${prefix}:rl:key:${keyId}:${Math.floor(time.now() / 60_000)}` }
  })

  it.scopedLive("each message of a batch counts against the key's 3000 a minute: those past it are refused, the others run", () =>
    Effect.gen(function*() {
      const { acme, counter, gateway, redis, time } = yield* countedKey
      // 2950 requests already counted this minute: 50 are left.
      yield* Effect.promise(() => redis.set(counter, 2950, "PX", 120_000))
      const headers = { authorization: `Bearer ${acme.accountKey}` }
      // A client of 2025-03-26 (no MCP-Protocol-Version header), the revision that has batches:
      // 98 tool calls, a notification and a ping: as many messages as a batch may hold.
      const batch = [
        ...Array.from({ length: 98 }, (_, i) => toolCall(i + 1, "get_status", {})),
        { jsonrpc: "2.0", method: "notifications/initialized" },
        { jsonrpc: "2.0", id: "ping", method: "ping" }
      ]
      const answer = yield* raw(gateway, { headers, body: batch })
      assert.strictEqual(answer.status, 200)
      const byId = new Map<unknown, any>(answer.body.map((a: any) => [a.id, a]))
      assert.strictEqual(answer.body.length, 99)
      for (let id = 1; id <= 50; id++) {
        assert.deepStrictEqual(byId.get(id).result.structuredContent.numbers.map((n: any) => n.id), [acme.numbers[0].id], `call ${id}`)
      }
      for (let id = 51; id <= 98; id++) {
        assert.deepStrictEqual(
          [refusal(byId.get(id).result).code, refusal(byId.get(id).result).retry_after_seconds],
          ["key_rate_limited", 60],
          `call ${id}`
        )
      }
      assert.deepStrictEqual(
        [byId.get("ping").error.code, byId.get("ping").error.data.code, byId.get("ping").error.data.retry_after_seconds],
        [-32000, "key_rate_limited", 60]
      )
      // Every message was counted: the key is over its limit for REST and MCP alike.
      assert.strictEqual(Number(yield* Effect.promise(() => redis.get(counter))), 2950 + 100)
      assert.strictEqual((yield* gateway.http.get("/api/v1/numbers", { headers })).status, 429)
      const again = yield* raw(gateway, { headers, body: [toolCall(1, "get_status", {}), { jsonrpc: "2.0", id: 2, method: "ping" }] })
      assert.deepStrictEqual(
        [again.status, refusal(again.body[0].result).code, again.body[1].error.data.code],
        [200, "key_rate_limited", "key_rate_limited"]
      )
      const notified = yield* raw(gateway, { headers, body: [{ jsonrpc: "2.0", method: "notifications/initialized" }] })
      assert.deepStrictEqual([notified.status, notified.body.code, notified.headers["retry-after"]], [429, "key_rate_limited", "60"])

      // The next minute a batch within the limit runs whole.
      time.adjust("60 seconds")
      const within = yield* raw(gateway, { headers, body: [toolCall(1, "get_status", {}), toolCall(2, "get_limits", {})] })
      assert.deepStrictEqual(within.body.map((a: any) => [a.id, a.result.isError]), [[1, undefined], [2, undefined]])
    }))

  it.scopedLive("a batch is answered with an array, even when one of its messages is a request", () =>
    Effect.gen(function*() {
      const { acme, gateway } = yield* world()
      const headers = { authorization: `Bearer ${acme.accountKey}` }
      const one = yield* raw(gateway, { headers, body: [toolCall(1, "get_status", {})] })
      assert.strictEqual(one.status, 200)
      assert.isArray(one.body)
      assert.deepStrictEqual(one.body.map((a: any) => a.id), [1])
      const withNotification = yield* raw(gateway, {
        headers,
        body: [{ jsonrpc: "2.0", id: "p", method: "ping" }, { jsonrpc: "2.0", method: "notifications/initialized" }]
      })
      assert.deepStrictEqual(withNotification.body, [{ jsonrpc: "2.0", id: "p", result: {} }])
      // A single message is still answered alone.
      const alone = yield* raw(gateway, { headers, body: toolCall(2, "get_status", {}) })
      assert.strictEqual(alone.body.id, 2)
    }))

  it.scopedLive("revisions without batches (2025-06-18 on) refuse one as an invalid request, counted once; so are an empty or oversized batch", () =>
    Effect.gen(function*() {
      const { acme, counter, gateway, redis } = yield* countedKey
      const headers = { authorization: `Bearer ${acme.accountKey}` }
      const calls = Array.from({ length: 3 }, (_, i) => toolCall(i + 1, "get_status", {}))
      for (const version of ["2025-06-18", "2025-11-25"]) {
        const refused = yield* raw(gateway, { headers: { ...headers, "mcp-protocol-version": version }, body: calls })
        assert.strictEqual(refused.status, 400, version)
        assert.strictEqual(refused.body.error.code, -32600, version)
        assert.match(refused.body.error.message, new RegExp(`MCP ${version} has no JSON-RPC batches`), version)
      }
      assert.strictEqual(Number(yield* Effect.promise(() => redis.get(counter))), 2)
      const old = yield* raw(gateway, { headers: { ...headers, "mcp-protocol-version": "2025-03-26" }, body: calls })
      assert.deepStrictEqual(old.body.map((a: any) => a.id), [1, 2, 3])
      const empty = yield* raw(gateway, { headers, body: [] })
      assert.deepStrictEqual([empty.status, empty.body.error.code], [400, -32600])
      const oversized = yield* raw(gateway, { headers, body: Array.from({ length: 101 }, (_, i) => toolCall(i, "get_status", {})) })
      assert.deepStrictEqual([oversized.status, oversized.body.error.code], [400, -32600])
      assert.strictEqual(Number(yield* Effect.promise(() => redis.get(counter))), 2 + 3 + 1 + 1)
    }))
  it.scopedLive("two requests of a batch with one id are refused as a whole (-32600, 400): their answers could not be told apart; nothing runs", () =>
    Effect.gen(function*() {
      const { acme, gateway } = yield* world()
      const headers = { authorization: `Bearer ${acme.accountKey}` }
      const to = uniquePhone()
      const twice = yield* raw(gateway, {
        headers,
        body: [toolCall(1, "send_message", { to, text: "first" }), toolCall(1, "send_message", { to, text: "second" })]
      })
      assert.deepStrictEqual([twice.status, twice.body.id, twice.body.error.code], [400, null, -32600])
      assert.match(twice.body.error.message, /two requests of the batch have the id 1; each needs its own/)
      const sent = yield* rest(gateway, acme.accountKey, "GET", `/api/v1/messages?chat=${to}`)
      assert.deepStrictEqual([sent.status, sent.body.messages], [200, []])
      // A notification has no id: one beside a request does not share it.
      const fine = yield* raw(gateway, {
        headers,
        body: [{ jsonrpc: "2.0", id: "1", method: "ping" }, toolCall(1, "get_status", {}), { jsonrpc: "2.0", method: "notifications/initialized" }]
      })
      assert.sameMembers(fine.body.map((a: any) => a.id), [1, "1"])
    }))
})

describe("MCP: DNS rebinding protection", () => {
  it.scopedLive("Host and Origin must name an allowed host: loopback names by default, MCP_ALLOWED_HOSTS otherwise", () =>
    Effect.gen(function*() {
      const { acme, gateway } = yield* world()
      const auth = { authorization: `Bearer ${acme.accountKey}` }
      const evilHost = yield* raw(gateway, { headers: { ...auth, host: "evil.example.com" } })
      assert.deepStrictEqual([evilHost.status, evilHost.body.code], [403, "host_not_allowed"])
      const evilOrigin = yield* raw(gateway, { headers: { ...auth, origin: "http://evil.example.com" } })
      assert.deepStrictEqual([evilOrigin.status, evilOrigin.body.code], [403, "origin_not_allowed"])
      for (const host of ["localhost:3000", "127.0.0.1", "[::1]:8080"]) {
        const ok = yield* raw(gateway, { headers: { ...auth, host, origin: `http://${host}` } })
        assert.strictEqual(ok.status, 200, host)
        assert.strictEqual(ok.body.result.protocolVersion, "2025-11-25")
      }
      // Refused before the key is looked at: a page cannot probe keys through a rebound name.
      const noKey = yield* raw(gateway, { headers: { host: "evil.example.com" } })
      assert.strictEqual(noKey.status, 403)

      const published = yield* startGateway(yield* freshDatabase, { settings: { mcpAllowedHosts: ["wa.example.com"] } })
      const key = (yield* provision(published.ops, { numbers: 0 })).accountKey
      const named = yield* raw(published, { headers: { authorization: `Bearer ${key}`, host: "wa.example.com" } })
      assert.strictEqual(named.status, 200)
      const local = yield* raw(published, { headers: { authorization: `Bearer ${key}` } })
      assert.deepStrictEqual([local.status, local.body.code], [403, "host_not_allowed"])
    }))
})
