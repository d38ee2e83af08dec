/**
 * A runner killed in the middle of an archive export: two `WAGATE_ROLE=runner` processes and an
 * api gateway on one PostgreSQL and one blob store; the runner writing the archive gets SIGKILL.
 * The export must not stay `running`: the other runner receives the persisted message, starts
 * the archive over and finishes it, and the store holds the one complete archive.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import { BlobStore } from "@wagate/media/BlobStore"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import { type ChildProcess, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import { mkdtempSync, readdirSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { blobBytes, readArchive, seedFile } from "../support/Archives.js"
import { eventually, provision } from "../support/Fixtures.js"
import { freePort, freshDatabase, OPERATOR_TOKEN, startGateway, WEBHOOK_SECRET_KEY } from "../support/TestGateway.js"
import { call } from "../support/Webhooks.js"

const root = join(import.meta.dirname, "../..")
const SECRET = "x".repeat(32)

interface Runner {
  readonly name: string
  readonly child: ChildProcess
  readonly output: () => string
}

const startRunner = (name: string, env: Record<string, string>) =>
  Effect.acquireRelease(
    Effect.gen(function*() {
      const base: Record<string, string> = {}
      for (const [k, v] of Object.entries(process.env)) {
        if (v !== undefined && !/^(DATABASE_URL|REDIS_URL|OPERATOR_TOKEN|S3_|WA_|WAGATE_|HTTP_|RUNNER_)/.test(k)) base[k] = v
      }
      const child = spawn(process.execPath, ["--import", "tsx", "apps/gateway/src/main.ts"], {
        cwd: root,
        env: {
          ...base,
          ...env,
          WAGATE_ROLE: "runner",
          WA_DRIVER: "simulator",
          RUNNER_HOST: "127.0.0.1",
          RUNNER_LISTEN_HOST: "127.0.0.1",
          RUNNER_PORT: String(yield* freePort),
          HTTP_PORT: String(yield* freePort),
          HTTP_HOST: "127.0.0.1"
        },
        stdio: ["ignore", "pipe", "pipe"]
      })
      let output = ""
      child.stdout!.on("data", (d) => (output += d))
      child.stderr!.on("data", (d) => (output += d))
      const runner: Runner = { name, child, output: () => output }
      yield* eventually(Effect.sync(() => output), (o) => o.includes("wagate runner on"), 60_000)
      return runner
    }),
    (runner) => Effect.sync(() => runner.child.exitCode === null && runner.child.kill("SIGKILL"))
  )

describe("a runner killed during an archive export", () => {
  it.scopedLive("the other runner starts the archive over and finishes it; one complete archive is kept", () =>
    Effect.gen(function*() {
      const database = yield* freshDatabase
      const name = yield* Effect.orDie(Effect.provide(
        Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ name: string }>`SELECT current_database() AS name`),
        database
      ))
      const admin = new URL(process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test")
      admin.pathname = `/${name[0].name}`
      const dataDir = mkdtempSync(join(tmpdir(), "wagate-crash-"))
      const env = {
        DATABASE_URL: admin.toString(),
        DATA_DIR: dataDir,
        OPERATOR_TOKEN,
        WEBHOOK_SECRET_KEY,
        BLOB_SIGNING_SECRET: SECRET
      }
      const runners = [yield* startRunner("runner-a", env), yield* startRunner("runner-b", env)]
      const gateway = yield* startGateway(database, {
        role: "api",
        blobs: (publicBaseUrl) =>
          BlobStore.layerFilesystem({ dir: join(dataDir, "blobs"), publicBaseUrl, signingSecret: Redacted.make(SECRET) })
      })
      const acme = yield* provision(gateway.ops, { numbers: 1, link: false })
      const n1 = acme.numbers[0]
      const FILES = 40
      for (let i = 0; i < FILES; i++) {
        yield* seedFile(gateway.database, gateway.blobs, {
          accountId: acme.accountId, numberId: n1.id, peer: "77770000001", filename: `file-${i}.bin`,
          bytes: randomBytes(3 * 1024 * 1024)
        })
      }

      const created = yield* call(gateway, "POST", "/api/v1/exports", acme.accountKey, {})
      assert.strictEqual(created.status, 202)
      const id = created.body.id
      const running = yield* eventually(
        call(gateway, "GET", `/api/v1/exports/${id}`, acme.accountKey),
        (a) => a.body.status !== "queued" && (a.body.status !== "running" || a.body.progress >= 2),
        60_000
      )
      assert.strictEqual(running.body.status, "running", "the export ended before the runner could be killed")
      const owner = runners.find((r) => r.output().includes(`archive export ${id} running`))!
      const survivor = runners.find((r) => r !== owner)!
      assert.isDefined(owner)
      owner.child.kill("SIGKILL")

      const done = yield* eventually(
        call(gateway, "GET", `/api/v1/exports/${id}`, acme.accountKey),
        (a) => a.body.status === "done" || a.body.status === "failed",
        120_000
      )
      assert.strictEqual(done.body.status, "done", JSON.stringify(done.body))
      assert.include(survivor.output(), `archive export ${id} running`)
      assert.strictEqual(done.body.files, FILES)
      assert.strictEqual(done.body.missing_files, 0)
      assert.strictEqual(done.body.messages, FILES)

      // One blob under the account's exports: the complete archive.
      assert.deepStrictEqual(readdirSync(join(dataDir, "blobs", "objects", "exports", String(acme.accountId))), [`${id}.zip`])
      const bytes = yield* blobBytes(gateway.blobs, `exports/${acme.accountId}/${id}.zip`)
      assert.strictEqual(bytes.byteLength, done.body.size)
      const { test, entries } = yield* readArchive(bytes)
      assert.include(test, "No errors detected")
      assert.strictEqual(entries.filter((e) => e.name.startsWith("media/")).length, FILES)
      const [row] = yield* Effect.orDie(Effect.provide(
        Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ status: string }>`SELECT status FROM exports WHERE id = ${id}`),
        database
      ))
      assert.strictEqual(row.status, "done")
    }), { timeout: 300_000 })
})
