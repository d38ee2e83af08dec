/**
 * Media files and storage accounting, against a gateway started as `npm start` starts it (its
 * own process, PostgreSQL, the S3 store on a local s3rver):
 *
 * - GET /storage on an account with 1,000,000 files: p50 / p99 over sequential requests.
 *   Baseline: the plain `SELECT sum(size)` over the same rows. Target: p99 under 50 ms.
 * - POST /media/delete of 100,000 files: time, and the gateway's peak RSS growth during it.
 *   Target: under 100 MB.
 * - An outgoing 50 MB attachment (POST /messages/send with a document URL): the gateway's peak
 *   RSS growth. Baseline: a plain S3 upload of the same bytes from this process (lib-storage,
 *   streamed from a file). Target: under 30 MB.
 * - An incoming 50 MB file (a peer's document on the simulated network, which downloads it from a
 *   local HTTP server as WhatsApp's media servers serve files): the peak RSS growth of a gateway
 *   started for it (its first large transfer) until the file is stored. Target: under 30 MB.
 *
 *   npx tsx test/bench/media.ts [--files 1000000] [--bulk 100000] [--requests 1000] [--mb 50]
 *     [--only storage,delete,outgoing,incoming]
 *
 * The files are `--mb` MiB; RSS growth is checked against its targets in MB (10^6 bytes).
 *
 * Run under `flock /tmp/wagate-bench.lock`. Exits non-zero when a target is missed (`--no-fail`: 0). Results:
 * docs/performance.md.
 */
import { S3Client } from "@aws-sdk/client-s3"
import { Upload } from "@aws-sdk/lib-storage"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as SqlClient from "@effect/sql/SqlClient"
import * as OpsClient from "@wagate/client/OpsClient"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import { createReadStream, mkdtempSync, writeFileSync } from "node:fs"
import { createServer } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { parseArgs } from "node:util"
import S3rver from "s3rver"
import { provision, uniquePhone } from "../support/Fixtures.js"
import * as BenchDatabase from "./support/BenchDatabase.js"
import { startGateway } from "./support/Gateway.js"
import { machine, rssMiB } from "./support/Processes.js"
import * as Verdict from "./support/Verdict.js"

const OPERATOR_TOKEN = "wag_op_bench_operator_token"
const BUCKET = "wagate-bench"
const DB_NAME = "wagate_bench_media"
const SEED_CHUNK = 100_000

const options = (argv: ReadonlyArray<string>) => {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      files: { type: "string", default: "1000000" },
      bulk: { type: "string", default: "100000" },
      requests: { type: "string", default: "1000" },
      mb: { type: "string", default: "50" },
      only: { type: "string", default: "storage,delete,outgoing,incoming" }
    }
  })
  return {
    files: Number(values.files),
    bulk: Number(values.bulk),
    requests: Number(values.requests),
    mb: Number(values.mb),
    only: new Set(values.only.split(","))
  }
}

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0

const ms = (n: number) => `${n.toFixed(1)} ms`

/** RSS is sampled in MiB; the targets are in MB (10^6 bytes), the stricter reading. */
const inMB = (mib: number) => (mib * 1024 * 1024) / 1e6
const growth = (mib: number) => `${mib.toFixed(1)} MiB (${inMB(mib).toFixed(1)} MB)`

/** Samples `pid`'s RSS every 20 ms while `work` runs; the peak growth over the RSS before it. */
const peakGrowth = <A, E, R>(pid: () => number, work: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const before = rssMiB(pid())
    let peak = before
    const timer = setInterval(() => void (peak = Math.max(peak, rssMiB(pid()))), 20)
    const started = performance.now()
    const result = yield* work.pipe(Effect.ensuring(Effect.sync(() => clearInterval(timer))))
    peak = Math.max(peak, rssMiB(pid()))
    return { result, growthMiB: peak - before, seconds: (performance.now() - started) / 1000 }
  })

/** `count` messages with files on one number, in chunks (the usage triggers run per statement). */
const seedFiles = (accountId: number, numberId: number, count: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    for (let from = 0; from < count; from += SEED_CHUNK) {
      const n = Math.min(SEED_CHUNK, count - from)
      yield* sql`
        WITH msgs AS (
          INSERT INTO messages (account_id, number_id, direction, source, chat_id, peer, wa_message_id, type, text,
                                status, media, created_at, updated_at)
          SELECT ${accountId}, ${numberId}, 'in', 'network', '7701' || lpad((i % 1000)::text, 7, '0') || '@c.us',
                 '7701' || lpad((i % 1000)::text, 7, '0'), ${`S${numberId}-`} || i, 'image', '', 'received',
                 '{"kind":"photo","mime_type":"image/jpeg","filename":null,"size":1000,"caption":null,"deleted":false}'::jsonb,
                 now() - interval '1 second' * i, now()
          FROM generate_series(${from + 1}::int, ${from + n}::int) AS i
          RETURNING id, chat_id, created_at
        )
        INSERT INTO media_files (message_id, account_id, number_id, chat_id, kind, mime_type, size, blob_key, created_at)
        SELECT id, ${accountId}, ${numberId}, chat_id, 'photo', 'image/jpeg', 1000 + id % 5000, 'bench/' || id, created_at
        FROM msgs`
    }
    yield* sql`ANALYZE media_files`
    yield* sql`ANALYZE messages`
  })

export const main = (argv: ReadonlyArray<string>) =>
  Effect.scoped(Effect.gen(function*() {
    const opts = options(argv)
    yield* Console.log(`media benchmark: ${machine()}`)
    yield* Console.log(`files ${opts.files}, bulk ${opts.bulk}, requests ${opts.requests}, attachment ${opts.mb} MB`)

    // The S3 server and the fresh database.
    const s3Dir = mkdtempSync(join(tmpdir(), "wagate-bench-s3-"))
    const s3 = new S3rver({ address: "127.0.0.1", port: 0, silent: true, directory: s3Dir, configureBuckets: [{ name: BUCKET }] })
    const s3Address = yield* Effect.acquireRelease(Effect.promise(() => s3.run()), () =>
      Effect.promise(() => {
        s3.httpServer.closeAllConnections()
        return s3.close()
      }))
    const s3Endpoint = `http://127.0.0.1:${s3Address.port}`
    yield* BenchDatabase.drop(DB_NAME)
    const db = yield* BenchDatabase.open(DB_NAME, { messages: -1, chats: 0, days: 0 })
    const gatewayEnv = {
      DATABASE_URL: db.url,
      MEDIA_ALLOW_PRIVATE_URLS: "true",
      S3_BUCKET: BUCKET,
      S3_ENDPOINT: s3Endpoint,
      S3_ACCESS_KEY_ID: "S3RVER",
      S3_SECRET_ACCESS_KEY: "S3RVER",
      S3_FORCE_PATH_STYLE: "true"
    }
    // Its own scope: the incoming file is measured in a gateway of its own (below).
    const firstScope = yield* Effect.acquireRelease(Scope.make(), (scope) => Scope.close(scope, Exit.void))
    const gateway = yield* startGateway("media-gateway", gatewayEnv).pipe(Scope.extend(firstScope))
    const http = yield* Layer.build(NodeHttpClient.layerUndici)
    const ops = yield* OpsClient.make({ baseUrl: gateway.url, token: OPERATOR_TOKEN }).pipe(Effect.provide(http))
    const withDb = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient>) => Effect.provide(effect, db.context)
    const checks: Array<Verdict.Check> = []

    // 1. GET /storage over 1,000,000 files.
    if (opts.only.has("storage")) {
      const big = yield* provision(ops).pipe(Effect.provide(http))
      const seedStart = performance.now()
      yield* withDb(seedFiles(big.accountId, big.numbers[0]!.id, opts.files))
      yield* Console.log(`seeded ${opts.files} files in ${((performance.now() - seedStart) / 1000).toFixed(1)} s`)
      const storageOnce = Effect.promise(async () => {
        const t0 = performance.now()
        const response = await fetch(`${gateway.url}/api/v1/storage`, { headers: { authorization: `Bearer ${big.accountKey}` } })
        const body = await response.json() as { files: number }
        if (response.status !== 200 || body.files !== opts.files) throw new Error(`GET /storage: ${response.status} ${JSON.stringify(body)}`)
        return performance.now() - t0
      })
      for (let i = 0; i < 20; i++) yield* storageOnce
      const latencies: Array<number> = []
      for (let i = 0; i < opts.requests; i++) latencies.push(yield* storageOnce)
      latencies.sort((a, b) => a - b)
      const baseline: Array<number> = []
      for (let i = 0; i < 5; i++) {
        const t0 = performance.now()
        yield* withDb(Effect.flatMap(SqlClient.SqlClient, (sql) =>
          sql`SELECT sum(size) FROM media_files WHERE account_id = ${big.accountId} AND deleted_at IS NULL`))
        baseline.push(performance.now() - t0)
      }
      baseline.sort((a, b) => a - b)
      const p99 = percentile(latencies, 99)
      yield* Console.log(
        `GET /storage (${opts.files} files): p50 ${ms(percentile(latencies, 50))}, p99 ${ms(p99)}; ` +
          `baseline SELECT sum(size): median ${ms(percentile(baseline, 50))}, max ${ms(baseline[baseline.length - 1]!)}; ` +
          `ratio p50 ${(percentile(baseline, 50) / percentile(latencies, 50)).toFixed(1)}x faster — target p99 < 50 ms: ${p99 < 50 ? "met" : "MISSED"}`
      )
      checks.push({
        what: `GET /storage, ${opts.files} files: p99`,
        target: "< 50 ms",
        measured: ms(p99),
        baseline: `SELECT sum(size) median ${ms(percentile(baseline, 50))}`,
        met: p99 < 50
      })

    }

    // 2. Bulk deletion of 100,000 files.
    if (opts.only.has("delete")) {
      const bulk = yield* provision(ops).pipe(Effect.provide(http))
      yield* withDb(seedFiles(bulk.accountId, bulk.numbers[0]!.id, opts.bulk))
      const deletion = yield* peakGrowth(() => gateway.child.pid, Effect.promise(async () => {
        const response = await fetch(`${gateway.url}/api/v1/media/delete`, {
          method: "POST",
          headers: { authorization: `Bearer ${bulk.accountKey}`, "content-type": "application/json" },
          body: JSON.stringify({ until: new Date(Date.now() + 60_000).toISOString() })
        })
        return await response.json() as { deleted: number }
      }))
      if (deletion.result.deleted !== opts.bulk) throw new Error(`bulk delete deleted ${JSON.stringify(deletion.result)}`)
      yield* Console.log(
        `POST /media/delete (${opts.bulk} files): ${deletion.seconds.toFixed(1)} s ` +
          `(${Math.round(opts.bulk / deletion.seconds)} files/s), gateway peak RSS growth ${growth(deletion.growthMiB)} — ` +
          `target < 100 MB: ${inMB(deletion.growthMiB) < 100 ? "met" : "MISSED"}`
      )
      checks.push({
        what: `POST /media/delete, ${opts.bulk} files: peak RSS growth`,
        target: "< 100 MB",
        measured: `${growth(deletion.growthMiB)} in ${deletion.seconds.toFixed(1)} s`,
        baseline: "",
        met: inMB(deletion.growthMiB) < 100
      })

    }

    // 3. An outgoing 50 MB attachment, and a plain S3 upload of the same bytes.
    const payload = Buffer.alloc(opts.mb * 1024 * 1024, 7)
    payload.write("%PDF-1.4\n", 0)
    const file = join(mkdtempSync(join(tmpdir(), "wagate-bench-file-")), "big.pdf")
    writeFileSync(file, payload)
    const files = yield* Effect.acquireRelease(
      Effect.async<{ port: number; close: () => void }>((resume) => {
        const server = createServer((_req, res) => {
          res.writeHead(200, { "content-type": "application/pdf", "content-length": payload.length })
          createReadStream(file).pipe(res)
        })
        server.listen(0, "127.0.0.1", () => resume(Effect.succeed({ port: (server.address() as any).port, close: () => server.close() })))
      }),
      (s) => Effect.sync(s.close)
    )
    const sender = yield* provision(ops).pipe(Effect.provide(http))
    const send = Effect.promise(async () => {
      const response = await fetch(`${gateway.url}/api/v1/messages/send`, {
        method: "POST",
        headers: { authorization: `Bearer ${sender.accountKey}`, "content-type": "application/json" },
        body: JSON.stringify({ to: uniquePhone(), document: { url: `http://127.0.0.1:${files.port}/big.pdf`, filename: "big.pdf" } })
      })
      if (response.status !== 200) throw new Error(`send: ${response.status} ${await response.text()}`)
    })
    if (opts.only.has("outgoing")) {
      const outgoing = yield* peakGrowth(() => gateway.child.pid, send)
      const client = new S3Client({
        endpoint: s3Endpoint,
        region: "us-east-1",
        forcePathStyle: true,
        credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" }
      })
      const plain = yield* peakGrowth(() => process.pid, Effect.promise(() =>
        new Upload({ client, params: { Bucket: BUCKET, Key: "baseline/big.pdf", Body: createReadStream(file), ContentType: "application/pdf" } }).done()
      ))
      yield* Console.log(
        `outgoing ${opts.mb} MB attachment: ${outgoing.seconds.toFixed(1)} s, gateway peak RSS growth ${growth(outgoing.growthMiB)}; ` +
          `baseline plain S3 upload: ${plain.seconds.toFixed(1)} s, RSS growth ${plain.growthMiB.toFixed(1)} MiB — ` +
          `target < 30 MB: ${inMB(outgoing.growthMiB) < 30 ? "met" : "MISSED"}`
      )
      checks.push({
        what: `outgoing ${opts.mb} MB attachment: peak RSS growth`,
        target: "< 30 MB",
        measured: `${growth(outgoing.growthMiB)}`,
        baseline: `plain S3 upload ${plain.growthMiB.toFixed(1)} MiB`,
        met: inMB(outgoing.growthMiB) < 30
      })
    }

    // 4. An incoming 50 MB file, downloaded by the gateway from the simulated network. The memory
    // a transfer takes is a high-water mark the process keeps and reuses (docs/performance.md), so
    // after the outgoing file it would cost nothing more: it is measured in a fresh gateway.
    if (opts.only.has("incoming")) {
      yield* Scope.close(firstScope, Exit.void)
      const receiver = yield* startGateway("media-gateway-incoming", gatewayEnv)
      const account = yield* OpsClient.make({ baseUrl: receiver.url, token: OPERATOR_TOKEN }).pipe(
        Effect.flatMap(provision),
        Effect.provide(http)
      )
      const peer = uniquePhone()
      const receive = Effect.promise(async () => {
        const posted = await fetch(`${receiver.url}/sim/v1/inbound`, {
          method: "POST",
          headers: { authorization: `Bearer ${OPERATOR_TOKEN}`, "content-type": "application/json" },
          body: JSON.stringify({
            to: account.numbers[0]!.phone,
            from: peer,
            text: "",
            type: "document",
            media: { url: `http://127.0.0.1:${files.port}/big.pdf`, mime_type: "application/pdf", filename: "big.pdf", size: payload.length }
          })
        })
        if (posted.status !== 201) throw new Error(`inbound: ${posted.status} ${await posted.text()}`)
        for (;;) {
          const page = await fetch(`${receiver.url}/api/v1/messages?chat=${peer}`, { headers: { authorization: `Bearer ${account.accountKey}` } })
          const body = await page.json() as { messages: Array<{ media_pending: boolean; media_skipped: boolean; media_skip_reason: string | null; media: { size: number | null } | null }> }
          const m = body.messages[0]
          if (m !== undefined && !m.media_pending) {
            if (m.media_skipped || m.media?.size !== payload.length) throw new Error(`incoming file not stored: ${JSON.stringify(m)}`)
            return
          }
          await new Promise((resolve) => setTimeout(resolve, 50))
        }
      })
      const incoming = yield* peakGrowth(() => receiver.child.pid, receive)
      yield* Console.log(
        `incoming ${opts.mb} MB file: ${incoming.seconds.toFixed(1)} s, gateway peak RSS growth ${growth(incoming.growthMiB)} — ` +
          `target < 30 MB: ${inMB(incoming.growthMiB) < 30 ? "met" : "MISSED"}`
      )
      checks.push({
        what: `incoming ${opts.mb} MB file: peak RSS growth`,
        target: "< 30 MB",
        measured: `${growth(incoming.growthMiB)} in ${incoming.seconds.toFixed(1)} s`,
        baseline: "",
        met: inMB(incoming.growthMiB) < 30
      })
    }
    yield* Verdict.verdict("media", checks)
  }))
