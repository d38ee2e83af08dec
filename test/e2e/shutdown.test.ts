/**
 * SIGTERM stops the process within its bound even when stopping is stuck, and the port it held
 * is free for a replacement at once.
 */
import { assert, describe, it } from "@effect/vitest"
import { spawn } from "node:child_process"
import { createServer } from "node:net"
import { join } from "node:path"
import { freePortAsync as freePort } from "../support/Ports.js"

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
})
