/**
 * A gateway process for the e2e tests: `npm start`'s command (or a test entry with hooks) on a
 * fresh PostgreSQL database and free ports, killed with the test's scope if still running.
 */
import * as OpsClient from "@wagate/client/OpsClient"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as SqlClient from "@effect/sql/SqlClient"
import { assert } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { eventually } from "../../support/Fixtures.js"
import { freshDatabase, OPERATOR_TOKEN, WEBHOOK_SECRET_KEY } from "../../support/TestGateway.js"
import { freePort } from "../../support/Ports.js"
import { TYPESCRIPT_LOADER } from "../../bench/support/Processes.js"

const root = join(import.meta.dirname, "../../..")
export const BOUND_MS = 4_000

export interface Gateway {
  readonly child: ChildProcess
  readonly output: () => string
}

/** `npm start`'s command with the test's environment, not waited for; killed with the scope if still running. */
export const spawnGateway = (env: Record<string, string>, entry = "apps/gateway/src/main.ts") =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const base: Record<string, string> = {}
      for (const [k, v] of Object.entries(process.env)) {
        if (v !== undefined && !/^(DATABASE_URL|REDIS_URL|OPERATOR_TOKEN|S3_|WA_|WAGATE_|HTTP_|RUNNER_|WEBHOOK_)/.test(k)) base[k] = v
      }
      const child = spawn(process.execPath, [...TYPESCRIPT_LOADER, entry], {
        cwd: root,
        env: { ...base, ...env },
        stdio: ["ignore", "pipe", "pipe"]
      })
      let output = ""
      child.stdout!.on("data", (d) => (output += d))
      child.stderr!.on("data", (d) => (output += d))
      const gateway: Gateway = { child, output: () => output }
      return gateway
    }),
    (gateway) => Effect.sync(() => gateway.child.exitCode === null && gateway.child.kill("SIGKILL"))
  )

/** {@link spawnGateway}, once it has announced itself and answers. */
export const startGateway = (env: Record<string, string>, entry = "apps/gateway/src/main.ts") =>
  Effect.gen(function*() {
    const gateway = yield* spawnGateway(env, entry)
    // Announced once it listens, after the database and the cluster are up: slow on a busy machine.
    yield* eventually(Effect.sync(gateway.output), (o) => o.includes("wagate all on") || gateway.child.exitCode !== null, 150_000)
    assert.include(gateway.output(), "wagate all on", gateway.output())
    yield* eventually(
      Effect.promise(() => fetch(`http://127.0.0.1:${env.HTTP_PORT}/api/status`).then((r) => r.status, () => 0)),
      (status) => status === 200,
      60_000
    )
    return gateway
  })

export const exited = (child: ChildProcess) =>
  Effect.async<{ readonly code: number | null; readonly at: number }>((resume) => {
    // A process killed by a signal has no exit code: its signalCode says it ended.
    if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.succeed({ code: child.exitCode, at: Date.now() }))
    child.once("exit", (code) => resume(Effect.succeed({ code, at: Date.now() })))
  })

/** POST /messages/send of `text`; status 0 when the connection failed. */
export const send = (url: string, key: string, text: string, headers: Record<string, string> = {}) =>
  Effect.promise(() =>
    fetch(`${url}/api/v1/messages/send`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers },
      body: JSON.stringify({ to: "77019990111", text })
    }).then(
      async (r) => ({ status: r.status, headers: r.headers, body: await r.json() as any }),
      (e) => ({ status: 0, headers: new Headers(), body: String(e) as any })
    )
  )

/** A fresh database, free ports and the environment of a gateway on them; its ops client. */
export const setup = Effect.gen(function*() {
  const database = yield* freshDatabase
  const [{ name }] = yield* Effect.orDie(Effect.provide(
    Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ name: string }>`SELECT current_database() AS name`),
    database
  ))
  const databaseUrl = new URL(process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test")
  databaseUrl.pathname = `/${name}`
  const [httpPort, runnerPort] = [yield* freePort, yield* freePort]
  const url = `http://127.0.0.1:${httpPort}`
  const env = {
    DATABASE_URL: databaseUrl.toString(),
    DATA_DIR: mkdtempSync(join(tmpdir(), "wagate-stuck-")),
    OPERATOR_TOKEN,
    WEBHOOK_SECRET_KEY,
    WA_DRIVER: "simulator",
    HTTP_HOST: "127.0.0.1",
    HTTP_PORT: String(httpPort),
    RUNNER_HOST: "127.0.0.1",
    RUNNER_LISTEN_HOST: "127.0.0.1",
    RUNNER_PORT: String(runnerPort),
    SHUTDOWN_TIMEOUT_MS: String(BOUND_MS),
    ENTITY_TIMEOUT_MS: "2000"
  }
  const ops = yield* OpsClient.make({ baseUrl: url, token: OPERATOR_TOKEN }).pipe(
    Effect.provide(yield* Layer.build(NodeHttpClient.layerUndici))
  )
  return { database, databaseUrl: databaseUrl.toString(), url, env, ops }
})

/** SIGTERM; how the process ended and how long it took. */
export const terminate = (gateway: Gateway) =>
  Effect.gen(function*() {
    const signalled = Date.now()
    gateway.child.kill("SIGTERM")
    const { code, at } = yield* exited(gateway.child).pipe(Effect.timeout(BOUND_MS + 20_000), Effect.orDie)
    return { code, took: at - signalled }
  })

