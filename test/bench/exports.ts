/**
 * Exports: the CSV of GET /export against PostgreSQL's own `COPY (SELECT ...) TO STDOUT (FORMAT
 * csv)` of the same 100 000 rows (through `psql`), and the ZIP archive of about 1 GB of stored
 * files on both blob stores (filesystem; S3 on s3rver in a process of its own) against a plain
 * `archiver` run over the same files read from local disk into nothing.
 *
 * The export side runs the gateway's own code in this process: `HistoryRows.stream` and
 * `HistoryFile.csv` as GET /export streams them (without the HTTP framing), and
 * `ArchiveBuilder.build` as the Export entity runs it, writing into the store. Resident memory of
 * this process is sampled every 20 ms during each archive; its growth over the level before the
 * archive is the figure.
 *
 *   flock /tmp/wagate-bench.lock npm run bench -- exports [--messages 100000] [--mb 1024] [--files 200]
 *     [--stores filesystem,s3] [--runs 3]
 *
 * Targets: CSV at least 0.5 of COPY's throughput; peak RSS growth under 200 MB per archive.
 * Exits non-zero when one is missed (`--no-fail`: exit 0). Results: docs/performance.md.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as ArchiveBuilder from "@wagate/exports/ArchiveBuilder"
import * as HistoryFile from "@wagate/exports/HistoryFile"
import { HistoryRows } from "@wagate/exports/HistoryRows"
import { BlobStore } from "@wagate/media/BlobStore"
import * as Database from "@wagate/store/Database"
import { ZipArchive } from "archiver"
import * as Console from "effect/Console"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import { execFileSync } from "node:child_process"
import { randomBytes } from "node:crypto"
import { createReadStream, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Writable } from "node:stream"
import { pipeline } from "node:stream/promises"
import { parseArgs } from "node:util"
import { machine, REPO, scopedNode } from "./support/Processes.js"
import { freePort } from "../support/Ports.js"
import * as Verdict from "./support/Verdict.js"

const options = (argv: ReadonlyArray<string>) => {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      messages: { type: "string", default: "100000" },
      mb: { type: "string", default: "1024" },
      files: { type: "string", default: "200" },
      stores: { type: "string", default: "filesystem,s3" },
      runs: { type: "string", default: "3" }
    }
  })
  return {
    messages: Number(values.messages),
    bytes: Number(values.mb) * 1024 * 1024,
    files: Number(values.files),
    // `--stores ""`: the CSV comparison only.
    stores: values.stores!.split(",").filter((s) => s !== "") as Array<"filesystem" | "s3">,
    runs: Number(values.runs)
  }
}

const rssMb = () => process.memoryUsage().rss / 1024 / 1024
const seconds = (start: number) => (performance.now() - start) / 1000

/** Runs `effect` while sampling this process's RSS, answering its result, seconds and peak RSS. */
const measured = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    ;(globalThis as { gc?: () => void }).gc?.()
    yield* Effect.sleep("500 millis")
    const before = rssMb()
    let peak = before
    const timer = setInterval(() => void (peak = Math.max(peak, rssMb())), 20)
    const start = performance.now()
    const result = yield* Effect.ensuring(effect, Effect.sync(() => clearInterval(timer)))
    return { result, seconds: seconds(start), before, peak: Math.max(peak, rssMb()) }
  })

/** Discards what it is given, counting the bytes. */
const sink = () => {
  let bytes = 0
  return { stream: new Writable({ write: (chunk: Buffer, _e, done) => void (bytes += chunk.length, done()) }), bytes: () => bytes }
}

const seed = (messages: number, files: number, fileBytes: number, blobs: ReadonlyArray<Context.Tag.Service<BlobStore>>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [account] = yield* sql<{ id: string }>`
      INSERT INTO accounts (email, company) VALUES ('bench@example.kz', 'Bench') RETURNING id`
    const [number] = yield* sql<{ id: string }>`
      INSERT INTO numbers (account_id, phone, status) VALUES (${account.id}, '77010000001', 'WORKING') RETURNING id`
    // Texts of the kind people send, a tenth with a comma or a quote, some with a line break.
    yield* sql`
      INSERT INTO messages (account_id, number_id, direction, source, chat_id, peer, wa_message_id, type, text,
                            status, created_at, updated_at)
      SELECT ${account.id}, ${number.id}, CASE WHEN g % 2 = 0 THEN 'in' ELSE 'out' END, 'api',
             (77020000000 + g % 500)::text || '@c.us', (77020000000 + g % 500)::text, 'WAB' || g, 'text',
             CASE WHEN g % 10 = 0 THEN 'Hello, "friend" number ' || g
                  WHEN g % 37 = 0 THEN 'two lines' || chr(10) || 'of text ' || g
                  ELSE 'Good afternoon! Your order ' || g || ' is ready for pickup at the usual place.' END,
             'delivered', now() - interval '2 days' + g * interval '1 ms', now() - interval '2 days' + g * interval '1 ms'
      FROM generate_series(1, ${messages}) g`
    yield* sql`ANALYZE messages`
    const keys: Array<string> = []
    for (let i = 0; i < files; i++) {
      const key = `media/${account.id}/${number.id}/bench-${i}`
      // Incompressible bytes, as photos and video are.
      const bytes = randomBytes(fileBytes)
      for (const store of blobs) yield* store.put(key, bytes, { contentType: "image/jpeg" })
      const [message] = yield* sql<{ id: string }>`
        INSERT INTO messages (account_id, number_id, direction, source, chat_id, peer, wa_message_id, type, text,
                              status, media, created_at, updated_at)
        VALUES (${account.id}, ${number.id}, 'in', 'network', '77029999999@c.us', '77029999999', ${"WAM" + i}, 'image',
                '', 'received', '{"kind":"photo","mime_type":"image/jpeg","filename":null,"size":1,"caption":null,"deleted":false}',
                now() - interval '1 day', now() - interval '1 day')
        RETURNING id`
      yield* sql`
        INSERT INTO media_files (message_id, account_id, number_id, kind, mime_type, size, blob_key)
        VALUES (${message.id}, ${account.id}, ${number.id}, 'photo', 'image/jpeg', ${fileBytes}, ${key})`
      keys.push(key)
    }
    return { accountId: Number(account.id), numberId: Number(number.id), keys }
  }).pipe(Effect.orDie)

/** s3rver in a child process, so its memory is not counted as the archive's. */
const s3rverProcess = (dir: string) =>
  Effect.gen(function*() {
    const port = yield* freePort
    yield* scopedNode("s3rver", [
      join(REPO, "node_modules/s3rver/bin/s3rver.js"), "-d", dir, "-a", "127.0.0.1", "-p", String(port), "-s",
      "--configure-bucket", "bench"
    ])
    for (let i = 0; i < 100; i++) {
      const up = yield* Effect.promise(() => fetch(`http://127.0.0.1:${port}/bench`).then(() => true, () => false))
      if (up) break
      yield* Effect.sleep("100 millis")
    }
    return { endpoint: `http://127.0.0.1:${port}` }
  })

export const main = (argv: ReadonlyArray<string>) =>
  Effect.scoped(Effect.gen(function*() {
    const o = options(argv)
    yield* Console.log(machine())
    const work = mkdtempSync(join(tmpdir(), "wagate-bench-exports-"))
    yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(work, { recursive: true, force: true })))
    const database = yield* Layer.build(Database.layerTest)
    const sql = Context.get(database, SqlClient.SqlClient)
    const links = { publicBaseUrl: "http://127.0.0.1", signingSecret: Redacted.make("b".repeat(32)) }
    const fsDir = join(work, "blobs")
    const stores: Array<{ readonly name: string; readonly store: Context.Tag.Service<BlobStore> }> = []
    for (const name of o.stores) {
      const layer = name === "filesystem"
        ? BlobStore.layerFilesystem({ dir: fsDir, ...links })
        : BlobStore.layerS3({
          endpoint: (yield* s3rverProcess(join(work, "s3"))).endpoint,
          region: "us-east-1",
          bucket: "bench",
          accessKeyId: Redacted.make("S3RVER"),
          secretAccessKey: Redacted.make("S3RVER"),
          forcePathStyle: true
        })
      stores.push({ name, store: Context.get(yield* Layer.build(layer), BlobStore) })
    }
    // The plain baseline reads the files from local disk: the filesystem store's own files.
    const local = stores.find((s) => s.name === "filesystem")?.store ??
      Context.get(yield* Layer.build(BlobStore.layerFilesystem({ dir: fsDir, ...links })), BlobStore)
    const fileBytes = Math.floor(o.bytes / o.files)
    yield* Console.log(`seeding ${o.messages} messages and ${o.files} files of ${(fileBytes / 1048576).toFixed(1)} MB...`)
    const seeded = yield* seed(o.messages, o.files, fileBytes, [...new Set([local, ...stores.map((s) => s.store)])])
      .pipe(Effect.provide(database))
    const history = yield* HistoryRows.pipe(Effect.provide(HistoryRows.Default), Effect.provide(database))
    const checks: Array<Verdict.Check> = []

    // CSV against COPY, best of `runs` each, alternating.
    const dbUrl = new URL(process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test")
    const [{ name }] = yield* Effect.orDie(sql<{ name: string }>`SELECT current_database() AS name`)
    dbUrl.pathname = `/${name}`
    const copySql = `COPY (SELECT m.id, m.created_at, m.number_id, n.phone, m.direction, m.source, m.peer, m.chat_id, ` +
      `m.type, m.text, m.status, m.wa_message_id, m.error FROM messages m LEFT JOIN numbers n ON n.id = m.number_id ` +
      `WHERE m.account_id = ${seeded.accountId} ORDER BY m.id LIMIT ${o.messages}) TO STDOUT (FORMAT csv)`
    let bestOurs = Infinity
    let bestCopy = Infinity
    let oursBytes = 0
    let copyBytes = 0
    for (let run = 0; run < o.runs; run++) {
      const start = performance.now()
      const out = execFileSync("psql", [dbUrl.toString(), "-q", "-c", copySql], { maxBuffer: 1 << 30 })
      bestCopy = Math.min(bestCopy, seconds(start))
      copyBytes = out.length
      const t = performance.now()
      oursBytes = yield* Stream.runFold(
        HistoryFile.csv(history.csv({ accountId: seeded.accountId, numberId: null }, o.messages)),
        0,
        (n, chunk) => n + chunk.byteLength
      )
      bestOurs = Math.min(bestOurs, seconds(t))
    }
    const ratio = bestCopy / bestOurs
    yield* Console.log(
      `CSV of ${o.messages} messages: export ${bestOurs.toFixed(3)} s (${(oursBytes / 1048576).toFixed(1)} MB, ` +
        `${Math.round(o.messages / bestOurs)} msg/s); COPY ${bestCopy.toFixed(3)} s (${(copyBytes / 1048576).toFixed(1)} MB, ` +
        `${Math.round(o.messages / bestCopy)} msg/s); ratio ${ratio.toFixed(2)} (target >= 0.5)`
    )
    checks.push({
      what: `CSV of ${o.messages} messages: throughput vs COPY`,
      target: ">= 0.5",
      measured: `${Verdict.fixed(ratio, 2)} (${Math.round(o.messages / bestOurs)} msg/s)`,
      baseline: `COPY ${Math.round(o.messages / bestCopy)} msg/s`,
      met: ratio >= 0.5
    })

    // Plain archiver over the same files, from local disk into nothing.
    const plain = yield* measured(Effect.promise(async () => {
      const archive = new ZipArchive({ zlib: { level: 6 } })
      const out = sink()
      const done = pipeline(archive, out.stream)
      for (const [i, key] of seeded.keys.entries()) {
        archive.append(createReadStream(join(fsDir, "objects", key)), { name: `media/${i}.jpg`, store: true })
      }
      await archive.finalize()
      await done
      return out.bytes()
    }))
    yield* Console.log(
      `plain archiver: ${plain.seconds.toFixed(2)} s, ${(plain.result / 1048576).toFixed(0)} MB, ` +
        `RSS +${(plain.peak - plain.before).toFixed(0)} MB`
    )

    for (const { name, store } of stores) {
      const key = `exports/${seeded.accountId}/bench-${name}.zip`
      const built = yield* measured(
        ArchiveBuilder.build({
          filter: { accountId: seeded.accountId, numberId: null },
          includeMedia: true,
          key,
          onProgress: () => Effect.void
        }).pipe(Effect.provide(HistoryRows.Default), Effect.provide(database), Effect.provideService(BlobStore, store))
      )
      const growth = built.peak - built.before
      yield* Console.log(
        `archive on ${name}: ${built.seconds.toFixed(2)} s (${(built.seconds / plain.seconds).toFixed(2)}x plain), ` +
          `${(built.result.size / 1048576).toFixed(0)} MB, ${built.result.files} files, ${built.result.messages} messages; ` +
          `RSS ${built.before.toFixed(0)} -> peak ${built.peak.toFixed(0)} MB, growth ${growth.toFixed(0)} MB (target < 200)`
      )
      checks.push({
        what: `ZIP of ${(plain.result / 1048576).toFixed(0)} MB of files on ${name}: peak RSS growth`,
        target: "< 200 MB",
        measured: `${growth.toFixed(0)} MB in ${built.seconds.toFixed(1)} s`,
        baseline: `plain archiver ${plain.seconds.toFixed(1)} s, +${(plain.peak - plain.before).toFixed(0)} MB`,
        met: growth < 200
      })
      yield* Effect.orDie(store.delete(key))
    }
    yield* Verdict.verdict("exports", checks)
  }))
