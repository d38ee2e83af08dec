/**
 * The official MCP conformance suite (@modelcontextprotocol/conformance, server scenarios)
 * against /api/mcp. The suite needs Node 22, so it runs through `npx -p node@22` from the npm
 * registry (cached by npm after the first run) rather than as a dependency of the project. It
 * cannot send an API key, so a loopback proxy adds the Bearer header and forwards everything
 * else untouched (the Host header included, for the DNS rebinding scenario). Scenarios that
 * exercise the SDK's sample server (its test_* tools, resources, prompts, logging, completion)
 * are listed with their reasons in conformance-baseline.yml; the suite fails when one of those
 * starts passing or any other scenario fails. Results are recorded in docs/mcp.md.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { spawn } from "node:child_process"
import { mkdtempSync } from "node:fs"
import { createServer, request as httpRequest } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { provision } from "../support/Fixtures.js"
import { freshDatabase, startGateway } from "../support/TestGateway.js"

export const CONFORMANCE = "@modelcontextprotocol/conformance@0.1.16"
const BASELINE = join(import.meta.dirname, "conformance-baseline.yml")

/** A proxy on loopback that adds `Authorization: Bearer <key>` to every request, for the scope. */
const keyProxy = (target: string, key: string) =>
  Effect.acquireRelease(
    Effect.async<{ url: string; close: () => Promise<void> }>((resume) => {
      const upstream = new URL(target)
      const server = createServer((req, res) => {
        const forwarded = httpRequest({
          host: upstream.hostname,
          port: upstream.port,
          path: req.url,
          method: req.method,
          headers: { ...req.headers, authorization: `Bearer ${key}` }
        }, (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers)
          answer.pipe(res)
        })
        forwarded.on("error", () => res.destroy())
        req.pipe(forwarded)
      })
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address() as AddressInfo
        resume(Effect.succeed({
          url: `http://127.0.0.1:${port}`,
          close: () => new Promise<void>((done) => server.close(() => done()))
        }))
      })
    }),
    (proxy) => Effect.promise(proxy.close)
  )

/** Runs the suite against `url`; its exit code and output. */
const runSuite = (url: string) =>
  Effect.async<{ code: number | null; output: string }>((resume) => {
    const child = spawn("npx", [
      "-y", "-p", "node@22", "-p", CONFORMANCE, "--",
      "conformance", "server", "--url", url, "--expected-failures", BASELINE
    ], { cwd: mkdtempSync(join(tmpdir(), "wagate-conformance-")), env: { ...process.env, NO_COLOR: "1" } })
    let output = ""
    child.stdout.on("data", (d) => (output += d))
    child.stderr.on("data", (d) => (output += d))
    child.on("close", (code) => resume(Effect.succeed({ code, output })))
    return Effect.sync(() => child.kill())
  })

describe("MCP conformance", () => {
  it.scopedLive("the server scenarios that apply pass; those of the SDK's sample server fail as listed", () =>
    Effect.gen(function*() {
      const gateway = yield* startGateway(yield* freshDatabase)
      const acme = yield* provision(gateway.ops)
      const proxy = yield* keyProxy(gateway.url, acme.accountKey)
      const { code, output } = yield* runSuite(`${proxy.url}/api/mcp`)
      assert.strictEqual(code, 0, output.slice(-6000))
      for (const scenario of ["server-initialize", "ping", "tools-list", "dns-rebinding-protection"]) {
        assert.match(output, new RegExp(`✓ ${scenario}: [1-9]\\d* passed, 0 failed`), scenario)
      }
    }), { timeout: 300_000 })
})
