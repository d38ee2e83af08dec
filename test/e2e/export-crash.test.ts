/**
 * A runner killed in the middle of an archive export: two `WAGATE_ROLE=runner` processes and an
 * api gateway on one PostgreSQL and one blob store (the filesystem, or S3 on s3rver); the runner
 * writing the archive gets SIGKILL. The export must not stay `running`: the other runner receives
 * the persisted message, starts the archive over and finishes it, and the store holds the one
 * complete archive and nothing of the killed run's half-written one.
 */
import { ListObjectsV2Command, S3Client } from "@aws-sdk/client-s3"
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import { BlobStore } from "@wagate/media/BlobStore"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { randomBytes } from "node:crypto"
import { mkdtempSync, readdirSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as S3rver from "../../packages/media/test/support/S3rver.js"
import { type Child, spawnTs } from "../bench/support/Processes.js"
import { blobBytes, readArchive, seedFile } from "../support/Archives.js"
import { eventually, provision } from "../support/Fixtures.js"
import { freshDatabase, OPERATOR_TOKEN, startGateway, WEBHOOK_SECRET_KEY } from "../support/TestGateway.js"
import { freePort } from "../support/Ports.js"
import { call } from "../support/Webhooks.js"

const SECRET = "x".repeat(32)

interface Runner {
  readonly name: string
  readonly child: Child
  readonly output: () => string
}

const startRunner = (name: string, env: Record<string, string>) =>
  Effect.acquireRelease(
    Effect.gen(function*() {
      const base: Record<string, string> = {}
      for (const [k, v] of Object.entries(process.env)) {
        if (v !== undefined && !/^(DATABASE_URL|REDIS_URL|OPERATOR_TOKEN|S3_|WA_|WAGATE_|HTTP_|RUNNER_)/.test(k)) base[k] = v
      }
      // Through the benchmarks' process helper: killed with the test file's process whatever
      // ends the test (a timeout included), besides the release below.
      const child = spawnTs(name, "apps/gateway/src/main.ts", {
        inheritEnv: false,
        reportExit: false,
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
        }
      })
      const runner: Runner = { name, child, output: child.output }
      yield* eventually(Effect.sync(() => child.output()), (o) => o.includes("wagate runner on"), 60_000)
      // A runner serves no HTTP: it names the port the cluster reaches it on.
      assert.match(child.output(), /wagate runner on 127\.0\.0\.1:\d+ \(the cluster's runner port; no HTTP API\)/)
      return runner
    }),
    (runner) => Effect.sync(() => runner.child.process.exitCode === null && runner.child.process.kill("SIGKILL"))
  )

describe("a runner killed during an archive export", () => {
  for (const kind of ["filesystem", "s3"] as const) {
  it.scopedLive(`the other runner starts the archive over and finishes it; one complete archive is kept (${kind})`, () =>
    Effect.gen(function*() {
      const database = yield* freshDatabase
      const name = yield* Effect.orDie(Effect.provide(
        Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ name: string }>`SELECT current_database() AS name`),
        database
      ))
      const admin = new URL(process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test")
      admin.pathname = `/${name[0].name}`
      const dataDir = mkdtempSync(join(tmpdir(), "wagate-crash-"))
      const s3 = kind === "s3" ? Context.get(yield* Layer.build(S3rver.layer), S3rver.S3Server) : null
      const env = {
        DATABASE_URL: admin.toString(),
        DATA_DIR: dataDir,
        OPERATOR_TOKEN,
        WEBHOOK_SECRET_KEY,
        BLOB_SIGNING_SECRET: SECRET,
        ...(s3 === null ? {} : {
          S3_BUCKET: S3rver.BUCKET,
          S3_ENDPOINT: s3.endpoint,
          S3_ACCESS_KEY_ID: "S3RVER",
          S3_SECRET_ACCESS_KEY: "S3RVER",
          S3_FORCE_PATH_STYLE: "true"
        })
      }
      const runners = [yield* startRunner("runner-a", env), yield* startRunner("runner-b", env)]
      const gateway = yield* startGateway(database, {
        role: "api",
        blobs: (publicBaseUrl) =>
          s3 === null
            ? BlobStore.layerFilesystem({ dir: join(dataDir, "blobs"), publicBaseUrl, signingSecret: Redacted.make(SECRET) })
            : BlobStore.layerS3(S3rver.options(s3.endpoint))
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
      const key = `exports/${acme.accountId}/${id}.zip`
      const partsOf = (method: string, query: string) =>
        s3 === null ? [] : s3.requests.filter((r) => r.method === method && r.url.startsWith(`/${S3rver.BUCKET}/${key}?${query}`))
      // On S3, killed once a part of the archive is in the store.
      if (s3 !== null) yield* eventually(Effect.sync(() => partsOf("PUT", "partNumber=")), (parts) => parts.length > 0, 60_000)
      const owner = runners.find((r) => r.output().includes(`archive export ${id} running`))!
      const survivor = runners.find((r) => r !== owner)!
      assert.isDefined(owner)
      owner.child.process.kill("SIGKILL")

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

      if (s3 === null) {
        // Nothing of the killed run is left: its temporary file was removed when the run started over.
        const leftovers = yield* eventually(
          Effect.sync(() => readdirSync(join(dataDir, "blobs", "tmp"))),
          (names) => names.length === 0,
          30_000
        )
        assert.deepStrictEqual(leftovers, [])
        // The line follows the removal: read once the process has written it.
        const logged = yield* eventually(
          Effect.sync(() => survivor.output()),
          (o) => o.includes(`removed an unfinished upload of export ${id}'s archive`),
          30_000
        )
        assert.include(logged, `removed an unfinished upload of export ${id}'s archive`)
        // One blob under the account's exports: the complete archive.
        assert.deepStrictEqual(readdirSync(join(dataDir, "blobs", "objects", "exports", String(acme.accountId))), [`${id}.zip`])
      } else {
        // Two multipart uploads of the archive were begun (the killed run's and the new one) and
        // one was completed: the killed run's parts never became an object. s3rver cannot list
        // incomplete uploads, which the runner says (the bucket's lifecycle rule reclaims them).
        assert.deepStrictEqual([partsOf("POST", "uploads").length, partsOf("POST", "uploadId=").length], [2, 1])
        assert.include(survivor.output(), "cannot list incomplete multipart uploads")
        const client = new S3Client({
          endpoint: s3.endpoint,
          region: "us-east-1",
          forcePathStyle: true,
          credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" }
        })
        const listed = yield* Effect.promise(() =>
          client.send(new ListObjectsV2Command({ Bucket: S3rver.BUCKET, Prefix: `exports/${acme.accountId}/` })))
        client.destroy()
        assert.deepStrictEqual((listed.Contents ?? []).map((o) => o.Key), [key])
      }
      const bytes = yield* blobBytes(gateway.blobs, key)
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
  }
})
