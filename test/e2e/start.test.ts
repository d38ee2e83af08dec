/**
 * What a new user does: `npm start` with nothing configured (embedded PostgreSQL under ./data,
 * in-memory limits, filesystem blobs), then the operator CLI provisions an account, money, a
 * number and keys, and the key reads the API. Then a restart keeps everything. No test reaches
 * WhatsApp: the provisioning runs on the simulator; the real network (the default) is only
 * started, with no number to connect.
 */
import { afterEach, assert, describe, it } from "@effect/vitest"
import { type ChildProcess, execFile, spawn } from "node:child_process"
import { mkdtempSync, readdirSync, readFileSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { freePortAsync as freePort } from "../support/Ports.js"

const root = join(import.meta.dirname, "../..")
const run = promisify(execFile)

/** Environment of a fresh machine: no database, Redis or operator token configured. */
const freshEnv = (dataDir: string, port: number) => {
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && !/^(DATABASE_URL|REDIS_URL|OPERATOR_TOKEN|S3_|WA_DRIVER|WA_|WAGATE_)/.test(k)) env[k] = v
  }
  return { ...env, DATA_DIR: dataDir, HTTP_PORT: String(port), HTTP_HOST: "127.0.0.1" }
}

/** The same on the simulated network, so linking a number reaches no one. */
const cleanEnv = (dataDir: string, port: number) => ({ ...freshEnv(dataDir, port), WA_DRIVER: "simulator" })

/** Every gateway a test started; whatever a test leaves (it failed or timed out) is stopped after it. */
const started = new Set<ChildProcess>()

afterEach(async () => {
  await Promise.all([...started].map(stop))
})

/** Whether any process of the group led by `pid` is still alive. */
const groupAlive = (pid: number) => {
  try {
    process.kill(-pid, 0)
    return true
  } catch {
    return false
  }
}

const start = async (env: Record<string, string>) => {
  const child = spawn("npm", ["start"], { cwd: root, env, stdio: ["ignore", "pipe", "pipe"], detached: true })
  started.add(child)
  let output = ""
  child.stdout!.on("data", (d) => (output += d))
  child.stderr!.on("data", (d) => (output += d))
  const url = `http://127.0.0.1:${env.HTTP_PORT}`
  // Knocks often from the first moment: a request the gateway accepts while it starts must still
  // be answered, not left hanging. Start-up is slow on a busy machine: up to 3 minutes.
  const deadline = Date.now() + 180_000
  while (Date.now() < deadline) {
    try {
      const response = await fetch(`${url}/api/status`, { signal: AbortSignal.timeout(10_000) })
      if (response.ok) return { child, url, output: () => output }
    } catch (error) {
      if ((error as Error).name === "TimeoutError") {
        await stop(child)
        throw new Error(`a request made while the gateway started got no answer:\n${output}`)
      }
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 50))
  }
  await stop(child)
  throw new Error(`gateway did not start:\n${output}`)
}

/** SIGTERM to the whole process group; SIGKILL to what is left after 30 s. */
const stop = async (child: ChildProcess) => {
  started.delete(child)
  const pid = child.pid!
  if (!groupAlive(pid)) return
  process.kill(-pid, "SIGTERM")
  const deadline = Date.now() + 30_000
  while (groupAlive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100))
  if (groupAlive(pid)) process.kill(-pid, "SIGKILL")
}

const cli = async (env: Record<string, string>, ...args: Array<string>) => {
  const { stdout } = await run("npm", ["run", "--silent", "cli", "--", ...args], { cwd: root, env })
  return JSON.parse(stdout)
}

describe("npm start on a fresh machine", () => {
  it("serves the API on embedded defaults, provisions through the CLI and keeps data across a restart", async () => {
    // DATA_DIR does not exist yet: the gateway creates it.
    const dataDir = join(mkdtempSync(join(tmpdir(), "wagate-e2e-")), "data")
    const env = cleanEnv(dataDir, await freePort())
    let gateway = await start(env)
    try {
      // Only the gateway's user may read DATA_DIR and the embedded database in it.
      assert.strictEqual(statSync(dataDir).mode & 0o777, 0o700)
      const open = readdirSync(join(dataDir, "pg"), { recursive: true, encoding: "utf8" })
        .map((name) => [name, statSync(join(dataDir, "pg", name)).mode & 0o777] as const)
        .filter(([, mode]) => (mode & 0o077) !== 0)
      assert.deepStrictEqual(open, [], "files of the embedded database readable by others")
      const status: any = await (await fetch(`${gateway.url}/api/status`)).json()
      assert.strictEqual(status.status, "ok")
      assert.strictEqual(status.checks.database.status, "embedded")
      assert.strictEqual(status.checks.redis.status, "memory")
      assert.strictEqual(status.checks.blob_store.status, "filesystem")
      // The generated operator token is kept for the CLI, readable only by its owner.
      assert.strictEqual(statSync(join(dataDir, "operator-token")).mode & 0o777, 0o600)
      assert.match(readFileSync(join(dataDir, "operator-token"), "utf8"), /^wag_op_/)
      // So is the generated key that encrypts webhook secrets at rest.
      assert.strictEqual(statSync(join(dataDir, "webhook-secret-key")).mode & 0o777, 0o600)
      assert.match(readFileSync(join(dataDir, "webhook-secret-key"), "utf8"), /^[A-Za-z0-9+/]{43}=\n$/)

      const account = await cli(env, "account", "create", "--email", "owner@shop.kz", "--company", "Shop LLP")
      assert.strictEqual(account.email, "owner@shop.kz")
      const balance = await cli(env, "account", "credit", "--account", String(account.id), "--amount", "9900")
      assert.strictEqual(balance.balance, 9900)
      const { number, link } = await cli(env, "number", "add", "--account", String(account.id), "--phone", "77015550001")
      assert.strictEqual(number.phone, "77015550001")
      assert.include(["STARTING", "SCAN_QR_CODE", "WORKING"], link.status)
      const key = await cli(env, "key", "issue", "--account", String(account.id))
      assert.match(key.key, /^wag_acc_/)
      const numberKey = await cli(env, "key", "issue", "--account", String(account.id), "--number", String(number.id))
      assert.strictEqual(numberKey.number_id, number.id)

      const me: any = await (await fetch(`${gateway.url}/api/v1/me`, { headers: { authorization: `Bearer ${key.key}` } })).json()
      assert.strictEqual(me.company, "Shop LLP")
      assert.strictEqual(me.wa_phone, "77015550001")
      const taken = await cli(env, "account", "create", "--email", "OWNER@shop.kz", "--company", "Again").catch((e) =>
        JSON.parse(e.stdout)
      )
      assert.strictEqual(taken.code, "email_taken")

      // Linking followed from the CLI: one JSON line per change, each QR as text and as a PNG, until WORKING.
      const watched = await run("npm", ["run", "--silent", "cli", "--", "number", "add", "--account", String(account.id), "--phone", "77015550002", "--watch"], {
        cwd: root,
        env
      })
      const lines = watched.stdout.trim().split("\n").map((l) => JSON.parse(l))
      assert.strictEqual(lines.at(-1).status, "WORKING")
      const qr = lines.find((l) => l.qr !== null)
      assert.isDefined(qr, watched.stdout)
      assert.match(qr.qr_image, /^data:image\/png;base64,iVBORw0KGgo/)
      assert.include(watched.stderr, "\u2588")

      const reissued = await cli(env, "key", "reissue", "--key-id", String(key.id))
      const old = await fetch(`${gateway.url}/api/v1/me`, { headers: { authorization: `Bearer ${key.key}` } })
      assert.strictEqual(old.status, 401)

      await stop(gateway.child)
      gateway = await start(env)
      const shown = await cli(env, "account", "show", "--account", String(account.id))
      assert.deepStrictEqual(shown.numbers.map((n: any) => n.phone), ["77015550001", "77015550002"])
      // Each number's first day (330 KZT) was drawn when it was added, and only then.
      assert.strictEqual(shown.balance.balance, 9900 - 2 * 330)
      const after = await fetch(`${gateway.url}/api/v1/numbers`, { headers: { "x-api-key": reissued.key } })
      assert.strictEqual(after.status, 200)
    } finally {
      await stop(gateway.child)
    }
  }, 480_000)

  it("with nothing configured the network is real WhatsApp (Baileys), and it starts without any number", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "wagate-e2e-"))
    const env = freshEnv(dataDir, await freePort())
    const gateway = await start(env)
    try {
      const status: any = await (await fetch(`${gateway.url}/api/status`)).json()
      assert.strictEqual(status.status, "ok")
      assert.match(gateway.output(), /network: baileys/)
      // No simulator control surface on the real network.
      const sim = await fetch(`${gateway.url}/sim/v1/config`)
      assert.strictEqual(sim.status, 404)
      const account = await cli(env, "account", "create", "--email", "real@shop.kz", "--company", "Real LLP")
      assert.strictEqual(account.email, "real@shop.kz")
    } finally {
      await stop(gateway.child)
    }
    const faults = gateway.output().split("\n").filter((line) => /defect|Error:/.test(line))
    assert.deepStrictEqual(faults, [], "the gateway logged a defect or an error")
  }, 240_000)

  it("npm start passes SIGTERM and SIGINT on: stopping the npm process stops the gateway", async () => {
    // One gateway for each signal, started side by side.
    await Promise.all((["SIGTERM", "SIGINT"] as const).map(async (signal) => {
      const dataDir = mkdtempSync(join(tmpdir(), "wagate-e2e-"))
      const gateway = await start(cleanEnv(dataDir, await freePort()))
      // Only npm itself gets the signal, as from a process manager or Ctrl-C on `npm start`.
      process.kill(gateway.child.pid!, signal)
      const deadline = Date.now() + 60_000
      while (groupAlive(gateway.child.pid!) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100))
      assert.isFalse(groupAlive(gateway.child.pid!), `a process of npm start outlived its ${signal}:\n${gateway.output()}`)
      started.delete(gateway.child)
    }))
  }, 480_000)

  it("the CLI says clearly when the gateway is not running", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "wagate-e2e-"))
    const env = { ...cleanEnv(dataDir, await freePort()), OPERATOR_TOKEN: "x" }
    const failure = await cli(env, "account", "show", "--account", "1").catch((e) => ({ exit: e.code, ...JSON.parse(e.stdout) }))
    assert.strictEqual(failure.exit, 1)
    assert.strictEqual(failure.code, "gateway_unreachable")
  }, 60_000)
})
