/**
 * The OpenAPI document is generated from the contract, lints clean, and names every endpoint of
 * the specification; the interactive docs page is served.
 */
import { assert, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { execFile } from "node:child_process"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { TestGateway } from "../support/TestGateway.js"

/** Every endpoint of the interface specification (paths relative to the site root). */
const SPEC_ENDPOINTS = [
  "post /api/v1/messages/send",
  "get /api/v1/messages",
  "get /api/v1/messages/{id}",
  "get /api/v1/chats",
  "get /api/v1/export",
  "get /api/v1/media/{id}",
  "delete /api/v1/media/{id}",
  "post /api/v1/media/delete",
  "get /api/v1/storage",
  "get /api/v1/exports",
  "post /api/v1/exports",
  "get /api/v1/exports/{id}",
  "get /api/v1/numbers",
  "get /api/v1/status",
  "get /api/v1/balance",
  "get /api/v1/me",
  "get /api/v1/limits",
  "post /api/v1/contacts/check",
  "get /api/v1/numbers/{id}/connection",
  "get /api/status"
]

layer(TestGateway.layer(), { excludeTestServices: true })("OpenAPI", (it) => {
  it.effect("names every endpoint of the spec with version 1.0.0, both security schemes and the limit headers", () =>
    Effect.gen(function*() {
      const { http } = yield* TestGateway
      const response = yield* http.get("/api/v1/openapi.json")
      assert.strictEqual(response.status, 200)
      const doc = (yield* response.json) as any
      assert.strictEqual(doc.openapi, "3.1.0")
      assert.strictEqual(doc.info.version, "1.0.0")
      const served = Object.entries(doc.paths).flatMap(([path, item]) =>
        Object.keys(item as object).map((method) => `${method} ${path}`)
      )
      for (const endpoint of SPEC_ENDPOINTS) assert.include(served, endpoint)
      assert.isFalse(served.some((e) => e.includes("/ops/")), "operator API stays out of the public document")
      assert.deepStrictEqual(doc.components.securitySchemes.bearer, {
        type: "http",
        scheme: "bearer",
        description: "`Authorization: Bearer <API key>`"
      })
      assert.deepStrictEqual(
        { in: doc.components.securitySchemes.apiKey.in, name: doc.components.securitySchemes.apiKey.name },
        { in: "header", name: "X-API-Key" }
      )
      const send = doc.paths["/api/v1/messages/send"].post
      assert.containsAllKeys(send.responses["200"].headers, ["X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"])
      assert.containsAllKeys(send.responses["429"].headers, ["Retry-After", "X-RateLimit-Reset"])
      for (const status of ["400", "401", "402", "404", "409", "429", "502", "503"]) {
        assert.property(send.responses, status)
      }
      const check = doc.paths["/api/v1/contacts/check"].post
      assert.containsAllKeys(check.responses["503"].headers, ["Retry-After"])
      assert.isUndefined(doc.components.schemas.HttpApiDecodeError)
      assert.deepStrictEqual(doc.components.schemas.NumberNotFound.properties.code, { type: "string", enum: ["number_not_found"] })
      const exportsCreate = doc.paths["/api/v1/exports"].post
      assert.property(exportsCreate.responses, "202")
      assert.property(doc.paths["/api/v1/media/{id}"].get.responses, "302")
    }))

  it.effect("lints clean with Spectral's OpenAPI ruleset", () =>
    Effect.gen(function*() {
      const { http } = yield* TestGateway
      const doc = yield* Effect.flatMap(http.get("/api/v1/openapi.json"), (r) => r.text)
      const dir = mkdtempSync(join(tmpdir(), "wagate-openapi-"))
      writeFileSync(join(dir, "openapi.json"), doc)
      writeFileSync(join(dir, ".spectral.yaml"), "extends: [\"spectral:oas\"]\n")
      // Run asynchronously: a synchronous child would block this process, gateway included, for
      // the whole lint, and the next test's kept-alive connection would meet a closed socket.
      const output = yield* Effect.tryPromise(() =>
        promisify(execFile)(
          join(process.cwd(), "node_modules/.bin/spectral"),
          ["lint", "openapi.json", "--ruleset", ".spectral.yaml", "--fail-severity", "warn", "--format", "text"],
          { cwd: dir, encoding: "utf8" }
        )
      ).pipe(
        Effect.map((result) => result.stdout),
        Effect.catchAll((error: any) =>
          Effect.sync(() => assert.fail(`spectral found problems:\n${error.error?.stdout}\n${error.error?.stderr ?? error}`))
        )
      )
      assert.match(output, /No results with a severity of 'warn' or higher found!/)
    }), { timeout: 60_000 })

  it.effect("serves an interactive docs page at /docs", () =>
    Effect.gen(function*() {
      const { http } = yield* TestGateway
      const response = yield* http.get("/docs")
      assert.strictEqual(response.status, 200)
      assert.match(response.headers["content-type"] ?? "", /text\/html/)
      assert.include(yield* response.text, "wagate")
    }))
})
