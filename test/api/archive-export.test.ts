/**
 * Archive exports through HTTP on both blob stores: POST /exports answers 202 `queued`, the
 * Export entity writes the ZIP, GET /exports/{id} reports it done with a fresh link, the archive
 * passes `unzip -t` and every entry reads back (CSV, JSON, transcripts, files stored unchanged),
 * and the webhook receives `export.ready` without a link.
 */
import { assert, describe, it } from "@effect/vitest"
import { parse } from "csv-parse/sync"
import * as Effect from "effect/Effect"
import { randomBytes } from "node:crypto"
import { blobBytes, readArchive, seedFile, storeLayer, type StoreKind } from "../support/Archives.js"
import { eventually, provision, seedMessages } from "../support/Fixtures.js"
import { freshDatabase, startGateway } from "../support/TestGateway.js"
import * as WebhookReceiver from "../support/WebhookReceiver.js"
import { call } from "../support/Webhooks.js"

const at = (s: string) => new Date(s)

describe.each(["filesystem", "s3"] as Array<StoreKind>)("archive export on the %s store", (kind) => {
  it.scopedLive("POST /exports -> queued -> done: the archive holds conversation, transcripts and files", () =>
    Effect.gen(function*() {
      const receiver = yield* WebhookReceiver.start
      const gateway = yield* startGateway(yield* freshDatabase, {
        blobs: yield* storeLayer(kind),
        settings: { webhookAllowPrivateUrls: true }
      })
      const acme = yield* provision(gateway.ops, { numbers: 1 })
      const n1 = acme.numbers[0]
      yield* call(gateway, "PUT", "/api/v1/webhook", acme.accountKey, { url: receiver.url("/hook") })
      const ids = yield* seedMessages(gateway.database, acme.accountId, [
        { numberId: n1.id, peer: "77770000001", direction: "in", text: "hello, \"friend\"", createdAt: at("2026-11-20T08:00:00Z") },
        { numberId: n1.id, peer: "77770000001", direction: "out", text: "=reply\nsecond line", createdAt: at("2026-11-20T09:00:00Z") },
        { numberId: n1.id, peer: "77770000002", direction: "in", text: "other chat", createdAt: at("2026-11-21T09:00:00Z") }
      ])
      const photo = yield* seedFile(gateway.database, gateway.blobs, {
        accountId: acme.accountId, numberId: n1.id, peer: "77770000002", filename: "scan 1.pdf",
        bytes: randomBytes(300_000), caption: "the scan"
      })
      const lost = yield* seedFile(gateway.database, gateway.blobs, {
        accountId: acme.accountId, numberId: n1.id, peer: "77770000002", filename: "gone.pdf",
        bytes: randomBytes(10), stored: false
      })

      const created = yield* call(gateway, "POST", "/api/v1/exports", acme.accountKey, {})
      assert.strictEqual(created.status, 202)
      assert.strictEqual(created.body.status, "queued")
      assert.strictEqual(created.body.include_media, true)
      for (const field of ["finished_at", "expires_at", "size", "files", "messages", "missing_files", "url", "error", "progress"]) {
        assert.strictEqual(created.body[field], null, field)
      }
      const id = created.body.id

      const done = yield* eventually(
        call(gateway, "GET", `/api/v1/exports/${id}`, acme.accountKey),
        (a) => a.body.status === "done" || a.body.status === "failed",
        60_000
      )
      assert.strictEqual(done.body.status, "done", JSON.stringify(done.body))
      assert.strictEqual(done.body.messages, 5)
      assert.strictEqual(done.body.files, 1)
      assert.strictEqual(done.body.missing_files, 1)
      assert.strictEqual(done.body.progress, 100)
      assert.strictEqual(done.body.error, null)
      assert.strictEqual(Date.parse(done.body.expires_at) - Date.parse(done.body.finished_at), 24 * 3_600_000)
      assert.isString(done.body.url)
      // A fresh link on every request.
      const again = yield* call(gateway, "GET", `/api/v1/exports/${id}`, acme.accountKey)
      assert.isString(again.body.url)

      const bytes = yield* Effect.promise(async () => {
        const response = await fetch(done.body.url)
        assert.strictEqual(response.status, 200)
        assert.match(response.headers.get("content-disposition") ?? "", /attachment; filename="wagate-export-\d+\.zip"/)
        return new Uint8Array(await response.arrayBuffer())
      })
      assert.strictEqual(bytes.byteLength, done.body.size)
      const { test, entries } = yield* readArchive(bytes)
      assert.include(test, "No errors detected")
      const byName = new Map(entries.map((e) => [e.name, e]))

      const csv: Array<Array<string>> = parse(byName.get("messages.csv")!.bytes.toString("utf8"))
      assert.strictEqual(csv[0][0], "id")
      assert.deepStrictEqual(csv.slice(1).map((r) => Number(r[0])), [...ids, photo.messageId, lost.messageId])
      assert.strictEqual(csv[2][9], "'=reply\nsecond line")
      assert.strictEqual(byName.get("messages.csv")!.method, 8)

      const json = JSON.parse(byName.get("messages.json")!.bytes.toString("utf8"))
      assert.strictEqual(json.count, 5)
      assert.strictEqual(json.messages[0].from_phone, n1.phone)
      assert.strictEqual(json.messages[1].text, "=reply\nsecond line")

      const transcripts = entries.filter((e) => e.name.startsWith("chats/"))
      assert.strictEqual(transcripts.length, 2)
      const first = transcripts[0].bytes.toString("utf8")
      assert.include(first, "Chat 77770000001@c.us")
      assert.include(first, "[2026-11-20 13:00:00] +77770000001: hello, \"friend\"")
      assert.include(first, `[2026-11-20 14:00:00] +${n1.phone} (us): =reply\n    second line`)
      assert.strictEqual(transcripts[0].method, 8)

      const files = entries.filter((e) => e.name.startsWith("media/"))
      assert.deepStrictEqual(files.map((f) => f.name), [`media/${n1.phone}/${photo.messageId}-scan 1.pdf`])
      assert.isTrue(Buffer.from(photo.bytes).equals(files[0].bytes))
      assert.strictEqual(files[0].method, 0)

      const events = yield* receiver.waitFor("/hook", 1, 30_000)
      const ready = events.map((e) => e.json).find((e) => e.event === "export.ready")
      assert.isDefined(ready)
      assert.strictEqual(ready.data.id, id)
      assert.strictEqual(ready.data.status, "done")
      assert.notInclude(JSON.stringify(ready), "http")
    }), { timeout: 120_000 })
})

describe("archive export without media", () => {
  it.scopedLive("include_media false: conversation only, files neither read nor counted missing", () =>
    Effect.gen(function*() {
      const gateway = yield* startGateway(yield* freshDatabase, { blobs: yield* storeLayer("filesystem") })
      const acme = yield* provision(gateway.ops, { numbers: 1 })
      const n1 = acme.numbers[0]
      yield* seedFile(gateway.database, gateway.blobs, {
        accountId: acme.accountId, numberId: n1.id, peer: "77770000002", filename: "a.bin", bytes: randomBytes(100)
      })
      const created = yield* call(gateway, "POST", "/api/v1/exports", acme.accountKey, { include_media: false })
      assert.strictEqual(created.body.include_media, false)
      const done = yield* eventually(
        call(gateway, "GET", `/api/v1/exports/${created.body.id}`, acme.accountKey),
        (a) => a.body.status === "done",
        60_000
      )
      assert.strictEqual(done.body.files, 0)
      assert.strictEqual(done.body.missing_files, 0)
      assert.strictEqual(done.body.messages, 1)
      const { entries } = yield* readArchive(yield* blobBytes(gateway.blobs, `exports/${acme.accountId}/${created.body.id}.zip`))
      assert.deepStrictEqual(entries.filter((e) => e.name.startsWith("media/")), [])
    }), { timeout: 120_000 })
})

