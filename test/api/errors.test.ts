/**
 * Every non-2xx answer is `{error, code}` JSON: unknown routes, wrong methods, malformed JSON,
 * oversized bodies, bad parameters; and nothing a client sends produces a 500.
 */
import { assert, layer } from "@effect/vitest"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Effect from "effect/Effect"
import { provision } from "../support/Fixtures.js"
import { TestGateway } from "../support/TestGateway.js"

const send = (request: HttpClientRequest.HttpClientRequest) =>
  Effect.gen(function*() {
    const { http } = yield* TestGateway
    const response = yield* http.execute(request)
    const text = yield* response.text
    let json: any = undefined
    try {
      json = JSON.parse(text)
    } catch {
      // left undefined: the assertion on the body shape reports it
    }
    return { status: response.status, json, contentType: response.headers["content-type"], headers: response.headers }
  })

const isErrorBody = (json: unknown) =>
  typeof json === "object" && json !== null && Object.keys(json).sort().join(",") === "code,error" &&
  typeof (json as any).error === "string" && typeof (json as any).code === "string"

layer(TestGateway.layer(), { excludeTestServices: true })("error answers", (it) => {
  it.effect("unknown routes answer 404 not_found, wrong methods 405 method_not_allowed, both as JSON", () =>
    Effect.gen(function*() {
      const { accountKey } = yield* provision((yield* TestGateway).ops)
      const auth = { authorization: `Bearer ${accountKey}` }
      for (const path of ["/nope", "/api/v1/nope", "/api/v2/messages", "/api/v1/messages/1/extra"]) {
        const r = yield* send(HttpClientRequest.get(path).pipe(HttpClientRequest.setHeaders(auth)))
        assert.strictEqual(r.status, 404, path)
        assert.isTrue(isErrorBody(r.json), path)
        assert.strictEqual(r.json.code, "not_found")
        assert.match(r.contentType ?? "", /application\/json/)
      }
      for (const [method, path] of [["DELETE", "/api/v1/messages"], ["PUT", "/api/v1/messages/send"], ["POST", "/api/v1/chats"], ["PATCH", "/api/v1/messages/1"]] as const) {
        const r = yield* send(HttpClientRequest.make(method)(path).pipe(HttpClientRequest.setHeaders(auth)))
        assert.strictEqual(r.status, 405, `${method} ${path}`)
        assert.strictEqual(r.json.code, "method_not_allowed")
        assert.isTrue(isErrorBody(r.json))
        assert.isString(r.headers["allow"], `${method} ${path}`)
      }
    }))

  it.effect("a fixed path is not an id: a method it lacks answers 405 with Allow, not the {id} route's 400", () =>
    Effect.gen(function*() {
      const { accountKey } = yield* provision((yield* TestGateway).ops)
      const ask = (method: "GET" | "DELETE" | "HEAD" | "POST", path: string, key?: string) =>
        send(HttpClientRequest.make(method)(path).pipe(
          key === undefined ? (r) => r : HttpClientRequest.setHeaders({ authorization: `Bearer ${key}` })
        ))
      for (
        const [method, path, allow] of [
          ["GET", "/api/v1/messages/send", "POST"],
          ["GET", "/api/v1/messages/send?from=1", "POST"],
          ["GET", "/api/v1/media/delete", "POST"],
          ["DELETE", "/api/v1/media/delete", "POST"],
          ["DELETE", "/api/v1/messages", "GET"]
        ] as const
      ) {
        const r = yield* ask(method, path, accountKey)
        assert.deepStrictEqual([r.status, r.json?.code, r.headers["allow"]], [405, "method_not_allowed", allow], `${method} ${path}`)
        assert.isTrue(isErrorBody(r.json), `${method} ${path}`)
        assert.include(r.json.error, `${method} is not allowed`)
        // The path and the method come before the key (docs/errors.md, "Order of checks"), as for
        // any other method a path does not have.
        const keyless = yield* ask(method, path)
        assert.deepStrictEqual([keyless.status, keyless.json?.code], [405, "method_not_allowed"], `${method} ${path} without a key`)
      }
      const head = yield* ask("HEAD", "/api/v1/messages/send", accountKey)
      assert.deepStrictEqual([head.status, head.headers["allow"]], [405, "POST"])
      // The {id} routes themselves are unchanged: the key first, then the id.
      assert.deepStrictEqual([(yield* ask("GET", "/api/v1/messages/abc")).status], [401])
      assert.deepStrictEqual((yield* ask("GET", "/api/v1/messages/abc", accountKey)).json?.code, "invalid_param")
      assert.deepStrictEqual((yield* ask("GET", "/api/v1/media/999999999", accountKey)).json?.code, "not_found")
      // A path whose percent-encoding does not decode is malformed, never a 405 naming the method asked.
      for (const [method, path] of [["GET", "/api/v1/messages/%ZZ"], ["DELETE", "/api/v1/media/%E0%A4"], ["GET", "/ops/v1/accounts/%"]] as const) {
        const r = yield* ask(method, path, accountKey)
        assert.deepStrictEqual([r.status, r.json?.code, r.headers["allow"]], [400, "invalid_param", undefined], `${method} ${path}`)
        assert.include(r.json.error, `The path ${path} is not valid`)
      }
      // HEAD is still answered by a fixed path's GET route.
      assert.strictEqual((yield* ask("HEAD", "/api/v1/numbers", accountKey)).status, 200)
    }))

  it.effect("a body that is not JSON answers 400 invalid_json; too large a body 413 payload_too_large", () =>
    Effect.gen(function*() {
      const { accountKey } = yield* provision((yield* TestGateway).ops)
      const post = (path: string, body: string, contentType = "application/json") =>
        send(HttpClientRequest.post(path).pipe(
          HttpClientRequest.setHeaders({ authorization: `Bearer ${accountKey}` }),
          HttpClientRequest.bodyText(body, contentType)
        ))
      for (const body of ["{", "{\"phone\": }", "not json at all", "[1,2"]) {
        const r = yield* post("/api/v1/contacts/check", body)
        assert.deepStrictEqual([r.status, r.json?.code], [400, "invalid_json"], body)
      }
      // curl -d sends form encoding: the body is still read as JSON.
      const labelled = yield* post("/api/v1/contacts/check", "{", "application/x-www-form-urlencoded")
      assert.deepStrictEqual([labelled.status, labelled.json?.code], [400, "invalid_json"])
      const big = yield* post("/api/v1/contacts/check", JSON.stringify({ phone: "7".repeat(2 * 1024 * 1024) }))
      assert.deepStrictEqual([big.status, big.json?.code], [413, "payload_too_large"])
    }))

  it.effect("an empty body, or JSON that is no object, answers 400 invalid_json alike on every endpoint with a body", () =>
    Effect.gen(function*() {
      const { accountKey } = yield* provision((yield* TestGateway).ops)
      const endpoints = [
        ["POST", "/api/v1/messages/send", accountKey],
        ["POST", "/api/v1/contacts/check", accountKey],
        ["POST", "/api/v1/media/delete", accountKey],
        ["POST", "/api/v1/webhook/resend", accountKey],
        ["PUT", "/api/v1/webhook", accountKey],
        ["POST", "/ops/v1/accounts", "wag_op_test_operator_token"]
      ] as const
      const bodies: ReadonlyArray<readonly [string, string]> = [
        ["", "The body is empty or null; send a JSON object"],
        ["[]", "The body must be a JSON object"],
        ["[{\"phone\": \"77010000001\"}]", "The body must be a JSON object"],
        ["\"77010000001\"", "The body must be a JSON object"],
        ["null", "The body is empty or null; send a JSON object"],
        ["5", "The body must be a JSON object"]
      ]
      // A body that may be left out (POST /exports: every export's defaults) takes none and null
      // as left out, and refuses other values alike.
      const optional = [["POST", "/api/v1/exports", accountKey, "\"\"", "[]"]] as const
      for (const [method, path, key, ...refused] of optional) {
        for (const body of refused) {
          const r = yield* send(HttpClientRequest.make(method)(path).pipe(
            HttpClientRequest.setHeaders({ authorization: `Bearer ${key}` }),
            HttpClientRequest.bodyText(body, "application/json")
          ))
          assert.deepStrictEqual([r.status, r.json?.code], [400, "invalid_json"], `${method} ${path} ${body}`)
        }
      }
      for (const [method, path, key] of endpoints) {
        for (const [body, error] of bodies) {
          const r = yield* send(HttpClientRequest.make(method)(path).pipe(
            HttpClientRequest.setHeaders({ authorization: `Bearer ${key}` }),
            HttpClientRequest.bodyText(body, "application/json")
          ))
          assert.deepStrictEqual([r.status, r.json], [400, { error, code: "invalid_json" }], `${method} ${path} ${body}`)
        }
      }
    }))

  it.effect("a value outside a choice names every value the field takes", () =>
    Effect.gen(function*() {
      const { accountKey } = yield* provision((yield* TestGateway).ops)
      const get = (path: string) =>
        send(HttpClientRequest.get(path).pipe(HttpClientRequest.setHeaders({ authorization: `Bearer ${accountKey}` })))
      const direction = yield* get("/api/v1/messages?direction=sideways")
      assert.deepStrictEqual(direction.json, {
        error: `direction: Expected "in" or "out", actual "sideways"`,
        code: "invalid_param"
      })
      const format = yield* get("/api/v1/export?format=xml")
      assert.deepStrictEqual([format.status, format.json?.error], [400, `format: Expected "csv" or "json", actual "xml"`])
    }))

  it.effect("operator endpoints answer the same way", () =>
    Effect.gen(function*() {
      const r = yield* send(HttpClientRequest.post("/ops/v1/accounts").pipe(
        HttpClientRequest.setHeaders({ authorization: "Bearer wrong" }),
        HttpClientRequest.bodyUnsafeJson({})
      ))
      assert.deepStrictEqual([r.status, r.json?.code], [401, "invalid_key"])
      const bad = yield* send(HttpClientRequest.post("/ops/v1/accounts").pipe(
        HttpClientRequest.setHeaders({ authorization: "Bearer wag_op_test_operator_token" }),
        HttpClientRequest.bodyUnsafeJson({ email: "no-at-sign", company: "x" })
      ))
      assert.deepStrictEqual([bad.status, bad.json?.code], [400, "invalid_param"])
      // Ids and page parameters are decimal digits, as on the public API.
      const { accountId } = yield* provision((yield* TestGateway).ops)
      const get = (path: string) =>
        send(HttpClientRequest.get(path).pipe(HttpClientRequest.setHeaders({ authorization: "Bearer wag_op_test_operator_token" })))
      assert.strictEqual((yield* get(`/ops/v1/accounts/${accountId}`)).status, 200)
      for (const path of [`/ops/v1/accounts/0x${accountId.toString(16)}`, `/ops/v1/accounts/0${accountId}`, `/ops/v1/accounts/${accountId}e0`]) {
        const r = yield* get(path)
        assert.deepStrictEqual([r.status, r.json?.code], [400, "invalid_param"], path)
      }
      assert.strictEqual((yield* get(`/ops/v1/accounts/${accountId}/ledger?limit=10&before=1000`)).status, 200)
      for (const query of ["limit=1e2", "limit=0x10", "before=0x20", "before=1e3"]) {
        const r = yield* get(`/ops/v1/accounts/${accountId}/ledger?${query}`)
        assert.deepStrictEqual([r.status, r.json?.code], [400, "invalid_param"], query)
      }
    }))

  it.effect("nothing a client sends produces a 500", () =>
    Effect.gen(function*() {
      const { accountKey, numbers } = yield* provision((yield* TestGateway).ops)
      const junk = ["", "0", "-1", "1e309", "%00", "☃", "'; DROP TABLE messages; --", "9".repeat(40), "null", "[]", "{}", "true"]
      const paths = [
        "/api/v1/messages", "/api/v1/messages/send", "/api/v1/messages/1", "/api/v1/chats", "/api/v1/export",
        "/api/v1/media/1", "/api/v1/media/delete", "/api/v1/storage", "/api/v1/exports", "/api/v1/exports/1",
        "/api/v1/numbers", `/api/v1/numbers/${numbers[0].id}/connection`, "/api/v1/status", "/api/v1/balance",
        "/api/v1/me", "/api/v1/limits", "/api/v1/contacts/check", "/api/status"
      ]
      const params = ["from", "chat", "since", "until", "direction", "limit", "before", "format", "download"]
      const statuses = new Set<number>()
      for (const path of paths) {
        for (const value of junk) {
          for (const method of ["GET", "POST", "DELETE"] as const) {
            const query = params.map((p) => `${p}=${encodeURIComponent(value)}`).join("&")
            const request = HttpClientRequest.make(method)(`${path}?${query}`).pipe(
              HttpClientRequest.setHeaders({ authorization: `Bearer ${accountKey}` }),
              method === "GET" ? (r) => r : HttpClientRequest.bodyText(value, "application/json")
            )
            const r = yield* send(request)
            statuses.add(r.status)
            // 501 is the honest answer of an endpoint this version does not serve yet.
            assert.isTrue(r.status < 500 || r.status === 501, `${method} ${path} ${value} -> ${r.status} ${JSON.stringify(r.json)}`)
            if (r.status >= 400) assert.isTrue(isErrorBody(r.json), `${method} ${path} ${value}: ${JSON.stringify(r.json)}`)
          }
        }
      }
      assert.isTrue(statuses.has(400) && statuses.has(404) && statuses.has(405))
    }), { timeout: 120_000 })
})
