/**
 * SIGTERM stops the process within its bound even when stopping is stuck, and the port it held
 * is free for a replacement at once; neither an open cabinet event stream nor a download whose
 * client stopped reading holds the stop.
 */
import { assert, describe, it } from "@effect/vitest"
import { BlobStore } from "@wagate/media/BlobStore"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import { connect, createServer } from "node:net"
import { join } from "node:path"
import { seedFile } from "../support/Archives.js"
import { browserClient } from "../support/Cabinet.js"
import { eventually, provision } from "../support/Fixtures.js"
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

  it.scopedLive("a download whose client stopped reading is cut after HTTP_DRAIN_TIMEOUT_MS: the stop finishes with status 0", () =>
    Effect.gen(function*() {
      const { database, env, url, ops } = yield* setup
      const secret = "s".repeat(32)
      const boundMs = 20_000
      const drainMs = 1_000
      const gateway = yield* startGateway({
        ...env,
        BLOB_SIGNING_SECRET: secret,
        SHUTDOWN_TIMEOUT_MS: String(boundMs),
        HTTP_DRAIN_TIMEOUT_MS: String(drainMs)
      })
      const acme = yield* provision(ops, { link: false })
      const blobs = Context.get(
        yield* Layer.build(BlobStore.layerFilesystem({
          dir: join(env.DATA_DIR, "blobs"),
          publicBaseUrl: url,
          signingSecret: Redacted.make(secret)
        })),
        BlobStore
      )
      // Far more than the sockets' buffers hold: the answer waits on a reader that never reads.
      const file = yield* seedFile(database, blobs, {
        accountId: acme.accountId, numberId: acme.numbers[0].id, peer: "77770000001", filename: "big.bin",
        bytes: randomBytes(64 * 1024 * 1024)
      })
      const link = yield* Effect.promise(() =>
        fetch(`${url}/api/v1/media/${file.messageId}?download=1`, {
          headers: { authorization: `Bearer ${acme.accountKey}` },
          redirect: "manual"
        }).then((r) => r.headers.get("location"))
      )
      assert.isString(link)
      const target = new URL(link!)
      const socket = yield* Effect.acquireRelease(
        Effect.sync(() => connect(Number(target.port), target.hostname)),
        (socket) => Effect.sync(() => socket.destroy())
      )
      let received = ""
      socket.on("data", (chunk: Buffer) => {
        received += chunk.subarray(0, 64).toString("latin1")
        // The client stops reading once the answer has begun.
        socket.pause()
      })
      socket.write(`GET ${target.pathname}${target.search} HTTP/1.1\r\nHost: ${target.host}\r\n\r\n`)
      yield* eventually(Effect.sync(() => received), (r) => r.startsWith("HTTP/1.1 200"), 30_000)

      const { code, took } = yield* terminate(gateway)
      assert.strictEqual(code, 0, `${took} ms: ${gateway.output()}`)
      // The download had its time before it was cut.
      assert.isAtLeast(took, drainMs - 100)
      assert.isBelow(took, boundMs, gateway.output())
      assert.notInclude(gateway.output(), "still stopping")
    }), { timeout: 300_000 })
})
