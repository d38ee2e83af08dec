/**
 * SIGTERM stops the process within its bound even when stopping is stuck, and the port it held
 * is free for a replacement at once; an open cabinet event stream does not hold the stop.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { spawn } from "node:child_process"
import { createServer } from "node:net"
import { join } from "node:path"
import { browserClient } from "../support/Cabinet.js"
import { eventually } from "../support/Fixtures.js"
import { freePortAsync as freePort } from "../support/Ports.js"
import { setup, startGateway, terminate } from "./support/GatewayProcess.js"

const root = join(import.meta.dirname, "../..")

const listenOn = (port: number) =>
  new Promise<void>((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(port, "127.0.0.1", () => server.close(() => resolve()))
  })

describe("shutdown", () => {
  it("SIGTERM with a stuck stop exits within the bound and frees the port", async () => {
    const port = await freePort()
    const boundMs = 2_000
    const child = spawn(
      join(root, "node_modules/.bin/tsx"),
      [join(root, "test/e2e/support/StuckProcess.ts"), String(port), String(boundMs)],
      { cwd: root, stdio: ["ignore", "pipe", "pipe"] }
    )
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error("the process did not start")), 60_000)
        child.stdout!.on("data", (d) => String(d).includes("ready") && (clearTimeout(timer), resolve()))
      })
      const signalled = Date.now()
      child.kill("SIGTERM")
      const code = await new Promise<number | null>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error("still running 20 s after SIGTERM")), 20_000)
        child.once("exit", (c) => (clearTimeout(timer), resolve(c)))
      })
      const took = Date.now() - signalled
      assert.strictEqual(code, 1)
      assert.isAtLeast(took, boundMs - 100)
      // A replacement binds the same port.
      await listenOn(port)
    } finally {
      if (child.exitCode === null) child.kill("SIGKILL")
    }
  }, 90_000)

  it.scopedLive("an open cabinet event stream ends as the stop begins: the stop finishes in time with status 0", () =>
    Effect.gen(function*() {
      const { env, url, ops } = yield* setup
      // Generous, for a loaded machine; a stop held by the stream lasts until then and exits with status 1.
      const boundMs = 15_000
      const gateway = yield* startGateway({ ...env, SHUTDOWN_TIMEOUT_MS: String(boundMs) })
      const account = yield* ops.ops.createAccount({ payload: { email: "open-tab@shop.kz", company: "Open tab" } })
      const { url: link } = yield* ops.ops.cabinetResetLink({ path: { id: account.id } })
      const tab = browserClient(url)
      yield* tab.open("/cabinet/reset/new")
      const token = new URL(link).searchParams.get("token")!
      assert.strictEqual((yield* tab.post("/reset/confirm", { token, password: "owner's own password" })).status, 200)
      const stream = yield* tab.events("/numbers/events")
      yield* eventually(Effect.sync(() => stream.text), (t) => t.includes("event: numbers"))

      const { code, took } = yield* terminate(gateway)
      assert.strictEqual(code, 0, `${took} ms: ${gateway.output()}`)
      assert.isBelow(took, boundMs, gateway.output())
      assert.notInclude(gateway.output(), "still stopping")
    }), { timeout: 300_000 })
})
