/**
 * Message files through HTTP on both blob stores: the redirect to a signed link and what the
 * link serves (type, disposition, name, ranges), link expiry and tampering, who may see which
 * file, deletion one by one and in bulk with the storage totals after each, and a store that is
 * down. Files arrive through the simulated network; the S3 store is a real s3rver.
 */
import { assert, describe, it } from "@effect/vitest"
import * as SignedLink from "@wagate/media/SignedLink"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as FileServer from "../support/FileServer.js"
import { eventually, provision, uniquePhone } from "../support/Fixtures.js"
import * as ManualClock from "../support/ManualClock.js"
import * as MediaStores from "../support/MediaStores.js"
import { freshDatabase, type RunningGateway, startGateway } from "../support/TestGateway.js"

const bytes = (n: number, seed: number) => Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) % 256)

const request = (url: string, init: RequestInit & { key?: string } = {}) =>
  Effect.promise(async () => {
    const headers = new Headers(init.headers)
    if (init.key !== undefined) headers.set("authorization", `Bearer ${init.key}`)
    const response = await fetch(url, { ...init, headers, redirect: "manual" })
    const body = Buffer.from(await response.arrayBuffer())
    return { status: response.status, headers: response.headers, body, json: () => JSON.parse(body.toString("utf8")) }
  })

/** A peer sends a file to the number; resolves with the stored message once the file is kept. */
const receive = (
  gateway: RunningGateway,
  key: string,
  to: string,
  media: { mimeType: string; filename?: string; bytes: Uint8Array },
  type: "image" | "document" | "video" | "voice" = "image"
) =>
  Effect.gen(function*() {
    const api = yield* gateway.client(key)
    const peer = uniquePhone()
    const sent = yield* gateway.sim.inbound({ to, from: peer, text: "see attached", type, media })
    const message = yield* eventually(
      Effect.map(api.messages.list({ urlParams: { chat: peer } }), (p) => p.messages.find((m) => m.wa_message_id === sent.message.waMessageId)),
      (m) => m?.media_pending === false
    )
    assert.strictEqual(message!.media_skipped, false, message!.media_skip_reason ?? "")
    return { id: message!.id, peer }
  })

const suite = (makeStore: Effect.Effect<MediaStores.MediaStore, never, any>) =>
  Effect.gen(function*() {
    const store = yield* makeStore
    const database = yield* freshDatabase
    const gateway = yield* startGateway(database, { blobs: store.layer })
    return { store, database, gateway }
  })

for (const kind of ["filesystem", "s3"] as const) {
  const makeStore = kind === "filesystem" ? MediaStores.filesystem : MediaStores.s3

  describe(`media files on the ${kind} store`, () => {
    it.scopedLive("GET /media/{id} redirects to a signed link that serves the file inline or as a download", () =>
      Effect.gen(function*() {
        const { gateway } = yield* suite(makeStore)
        const acme = yield* provision(gateway.ops)
        const number = acme.numbers[0]!
        const photo = bytes(3000, 7)
        const { id } = yield* receive(gateway, acme.accountKey, number.phone, { mimeType: "image/png", bytes: photo })

        const started = Date.now()
        const redirect = yield* request(`${gateway.url}/api/v1/media/${id}`, { key: acme.accountKey })
        assert.strictEqual(redirect.status, 302)
        const location = redirect.headers.get("location")!
        if (kind === "filesystem") {
          assert.isTrue(location.startsWith(`${gateway.url}/files/`), location)
          const claims = SignedLink.verify(MediaStores.SIGNING_SECRET, location.slice(location.lastIndexOf("/") + 1), started / 1000)
          assert.isTrue(Either.isRight(claims))
          const lifetime = Either.getOrThrow(claims).expiresAt - started / 1000
          assert.isTrue(lifetime > 899 && lifetime <= 902, `lifetime ${lifetime}`)
        } else {
          const url = new URL(location)
          assert.strictEqual(url.searchParams.get("X-Amz-Expires"), "900")
        }
        const file = yield* request(location)
        assert.strictEqual(file.status, 200)
        assert.isTrue(file.body.equals(Buffer.from(photo)))
        assert.strictEqual(file.headers.get("content-type"), "image/png")
        assert.strictEqual(file.headers.get("content-disposition"), `inline; filename="photo-${id}.png"`)

        const download = yield* request(`${gateway.url}/api/v1/media/${id}?download=1`, { key: acme.accountKey })
        const saved = yield* request(download.headers.get("location")!)
        assert.strictEqual(saved.headers.get("content-disposition"), `attachment; filename="photo-${id}.png"`)
        // true and false say the same as 1 and 0; anything else is refused.
        for (const [value, disposition] of [["true", "attachment"], ["True", "attachment"], ["false", "inline"], ["0", "inline"]]) {
          const link = yield* request(`${gateway.url}/api/v1/media/${id}?download=${value}`, { key: acme.accountKey })
          assert.strictEqual(link.status, 302, value)
          const served = yield* request(link.headers.get("location")!)
          assert.strictEqual(served.headers.get("content-disposition"), `${disposition}; filename="photo-${id}.png"`, value)
        }
        for (const value of ["yes", "2", "tRUE", ""]) {
          const refused = yield* request(`${gateway.url}/api/v1/media/${id}?download=${value}`, { key: acme.accountKey })
          assert.deepStrictEqual([refused.status, refused.json().code], [400, "invalid_param"], value)
          assert.strictEqual(refused.json().error, `download: must be 1, 0, true or false, not "${value}"`)
        }

        // Not a type a browser shows safely: always a download, under its original name.
        const archive = bytes(500, 3)
        const doc = yield* receive(gateway, acme.accountKey, number.phone, {
          mimeType: "application/zip",
          filename: "Отчёт 2026.zip",
          bytes: archive
        }, "document")
        const docLink = yield* request(`${gateway.url}/api/v1/media/${doc.id}`, { key: acme.accountKey })
        const docFile = yield* request(docLink.headers.get("location")!)
        assert.isTrue(docFile.body.equals(Buffer.from(archive)))
        assert.strictEqual(
          docFile.headers.get("content-disposition"),
          `attachment; filename="_____ 2026.zip"; filename*=UTF-8''%D0%9E%D1%82%D1%87%D1%91%D1%82%202026.zip`
        )

        // A byte range of the file.
        const part = yield* request(location, { headers: { range: "bytes=100-199" } })
        assert.strictEqual(part.status, 206)
        assert.isTrue(part.body.equals(Buffer.from(photo.slice(100, 200))))
        assert.strictEqual(part.headers.get("content-range"), "bytes 100-199/3000")
      }))

    it.scopedLive("a file of a type that can run script (SVG) is only a download, under a neutral type; made names carry the extension", () =>
      Effect.gen(function*() {
        const { gateway } = yield* suite(makeStore)
        const acme = yield* provision(gateway.ops)
        const number = acme.numbers[0]!
        const served = (id: number) =>
          Effect.flatMap(request(`${gateway.url}/api/v1/media/${id}`, { key: acme.accountKey }), (link) =>
            Effect.map(request(link.headers.get("location")!), (file) => ({ location: link.headers.get("location")!, file })))

        const svg = Buffer.from("<svg xmlns=\"http://www.w3.org/2000/svg\"><script>alert(document.domain)</script></svg>")
        const image = yield* receive(gateway, acme.accountKey, number.phone, { mimeType: "image/svg+xml", bytes: svg })
        const { file, location } = yield* served(image.id)
        assert.isTrue(file.body.equals(svg))
        assert.deepStrictEqual(
          [file.headers.get("content-type"), file.headers.get("content-disposition")],
          ["application/octet-stream", `attachment; filename="photo-${image.id}.svg"`]
        )
        if (kind === "s3") {
          const url = new URL(location)
          assert.strictEqual(url.searchParams.get("response-content-type"), "application/octet-stream")
          assert.strictEqual(url.searchParams.get("response-content-disposition"), `attachment; filename="photo-${image.id}.svg"`)
        }

        // A voice note's type has parameters: it still plays inline, and its name ends in .ogg.
        const voice = yield* receive(gateway, acme.accountKey, number.phone, { mimeType: "audio/ogg; codecs=opus", bytes: bytes(400, 5) }, "voice")
        const note = (yield* served(voice.id)).file
        assert.deepStrictEqual(
          [note.headers.get("content-type"), note.headers.get("content-disposition")],
          ["audio/ogg; codecs=opus", `inline; filename="voice-${voice.id}.ogg"`]
        )
      }))

    it.scopedLive("only the file's account, and of number keys only its number's, sees it; wrong and deleted ids are not_found", () =>
      Effect.gen(function*() {
        const { gateway } = yield* suite(makeStore)
        const acme = yield* provision(gateway.ops, { numbers: 2 })
        const other = yield* provision(gateway.ops)
        const [first, second] = acme.numbers
        const { id } = yield* receive(gateway, acme.accountKey, first!.phone, { mimeType: "image/jpeg", bytes: bytes(100, 1) })
        const status = (key: string, path = `/api/v1/media/${id}`, method = "GET") =>
          Effect.map(request(`${gateway.url}${path}`, { key, method }), (r) => [r.status, r.status === 302 ? "" : r.json().code])
        assert.deepStrictEqual(yield* status(acme.numberKeys[0]!), [302, ""])
        assert.deepStrictEqual(yield* status(acme.numberKeys[1]!), [404, "not_found"])
        assert.deepStrictEqual(yield* status(other.accountKey), [404, "not_found"])
        assert.deepStrictEqual(yield* status(acme.accountKey, `/api/v1/media/999999999`), [404, "not_found"])
        assert.deepStrictEqual(yield* status(acme.accountKey, `/api/v1/media/abc`), [400, "invalid_param"])
        // Only decimal digits name a file: to JavaScript's Number() each of these is its id.
        for (const form of [`0${id}`, `0x${id.toString(16)}`, `${id}e0`]) {
          assert.deepStrictEqual(yield* status(acme.accountKey, `/api/v1/media/${form}`, "DELETE"), [400, "invalid_param"], form)
          assert.deepStrictEqual(yield* status(acme.accountKey, `/api/v1/media/${form}`), [400, "invalid_param"], form)
        }
        // Deleting is held to the same rules.
        assert.deepStrictEqual(yield* status(acme.numberKeys[1]!, `/api/v1/media/${id}`, "DELETE"), [404, "not_found"])
        assert.deepStrictEqual(yield* status(other.accountKey, `/api/v1/media/${id}`, "DELETE"), [404, "not_found"])
        assert.deepStrictEqual(yield* status(acme.accountKey), [302, ""])
        // Storage is the account's alone.
        assert.deepStrictEqual(yield* status(acme.numberKeys[0]!, "/api/v1/storage"), [403, "forbidden_for_number_key"])
        void second
      }))

    it.scopedLive("deleting a file takes it out of the totals at once and keeps the message; bulk deletion filters", () =>
      Effect.gen(function*() {
        const { gateway } = yield* suite(makeStore)
        const acme = yield* provision(gateway.ops, { numbers: 2 })
        const [first, second] = acme.numbers
        const api = yield* gateway.client(acme.accountKey)
        const a = yield* receive(gateway, acme.accountKey, first!.phone, { mimeType: "image/jpeg", bytes: bytes(1000, 1) })
        const b = yield* receive(gateway, acme.accountKey, first!.phone, { mimeType: "video/mp4", bytes: bytes(5000, 2) }, "video")
        const c = yield* receive(gateway, acme.accountKey, second!.phone, { mimeType: "image/jpeg", bytes: bytes(300, 3) })
        const d = yield* receive(gateway, acme.accountKey, first!.phone, { mimeType: "application/pdf", filename: "a.pdf", bytes: bytes(700, 4) }, "document")

        const storage = yield* api.storage.get()
        assert.deepStrictEqual(
          [storage.used_bytes, storage.files, storage.over_bytes, storage.state, storage.packs, storage.daily_charge, storage.pending_files],
          [7000, 4, 0, "ok", [], 0, 0]
        )
        assert.deepStrictEqual(storage.by_kind, [
          { kind: "photo", bytes: 1300, files: 2 },
          { kind: "video", bytes: 5000, files: 1 },
          { kind: "document", bytes: 700, files: 1 }
        ])
        assert.deepStrictEqual(storage.by_number, [
          { number_id: first!.id, bytes: 6700, files: 3 },
          { number_id: second!.id, bytes: 300, files: 1 }
        ].sort((x, y) => x.number_id - y.number_id))
        assert.strictEqual(storage.included_bytes, 5 * 1024 ** 3)

        // One file: gone from the totals and from GET /media, the message and its text stay.
        const one = yield* request(`${gateway.url}/api/v1/media/${a.id}`, { key: acme.accountKey, method: "DELETE" })
        assert.deepStrictEqual([one.status, one.json()], [200, { ok: true, deleted: 1, freed_bytes: 1000 }])
        assert.deepStrictEqual([(yield* api.storage.get()).used_bytes, (yield* api.storage.get()).files], [6000, 3])
        const kept = yield* api.messages.get({ path: { id: a.id } })
        assert.deepStrictEqual([kept.text, kept.media?.deleted, kept.media?.size], ["see attached", true, 1000])
        assert.strictEqual((yield* request(`${gateway.url}/api/v1/media/${a.id}`, { key: acme.accountKey })).status, 404)
        assert.strictEqual((yield* request(`${gateway.url}/api/v1/media/${a.id}`, { key: acme.accountKey, method: "DELETE" })).status, 404)

        const bulk = (key: string, body: unknown) =>
          Effect.map(
            request(`${gateway.url}/api/v1/media/delete`, {
              key,
              method: "POST",
              headers: { "content-type": "application/json" },
              body: JSON.stringify(body)
            }),
            (r) => [r.status, r.json()]
          )
        const future = new Date(Date.now() + 60_000).toISOString()
        assert.deepStrictEqual((yield* bulk(acme.accountKey, {}))[0], 400)
        assert.deepStrictEqual((yield* bulk(acme.accountKey, { until: "yesterday-ish" }))[1].code, "invalid_param")
        assert.deepStrictEqual((yield* bulk(acme.accountKey, { until: future, kind: "gif" }))[1].code, "invalid_param")
        assert.deepStrictEqual((yield* bulk(acme.accountKey, { until: future, min_size: -1 }))[1].code, "invalid_param")
        assert.deepStrictEqual((yield* bulk(acme.accountKey, { until: future, from: "x" }))[1].code, "invalid_from")
        assert.deepStrictEqual((yield* bulk(acme.numberKeys[1]!, { until: future, from: first!.id }))[1].code, "number_not_found")
        // Before the files arrived: nothing.
        assert.deepStrictEqual(yield* bulk(acme.accountKey, { until: "2020-01-01" }), [200, { ok: true, deleted: 0, freed_bytes: 0 }])
        // A number key deletes only its own number's files.
        assert.deepStrictEqual(yield* bulk(acme.numberKeys[1]!, { until: future, kind: "photo" }), [200, { ok: true, deleted: 1, freed_bytes: 300 }])
        assert.deepStrictEqual(yield* bulk(acme.accountKey, { until: future, min_size: 1000 }), [200, { ok: true, deleted: 1, freed_bytes: 5000 }])
        assert.deepStrictEqual(yield* bulk(acme.accountKey, { until: future, chat: b.peer }), [200, { ok: true, deleted: 0, freed_bytes: 0 }])
        assert.deepStrictEqual(yield* bulk(acme.accountKey, { until: future, chat: d.peer, from: first!.phone }), [200, { ok: true, deleted: 1, freed_bytes: 700 }])
        const after = yield* api.storage.get()
        assert.deepStrictEqual([after.used_bytes, after.files, after.by_kind, after.by_number], [0, 0, [], []])
        void c
      }))

    it.scopedLive("an attachment sent through POST /messages/send is kept, counted and served under its name", () =>
      Effect.gen(function*() {
        const files = yield* FileServer.start
        const { gateway } = yield* suite(makeStore)
        const acme = yield* provision(gateway.ops)
        const sent = yield* request(`${gateway.url}/api/v1/messages/send`, {
          key: acme.accountKey,
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ to: uniquePhone(), document: { url: files.url("/report.pdf"), filename: "Invoice 42.pdf" } })
        })
        assert.strictEqual(sent.status, 200, sent.body.toString())
        const id = sent.json().id as number
        // The network was handed the whole file, read back from the store.
        const [onNetwork] = yield* gateway.sim.sent({ from: acme.numbers[0]!.phone })
        assert.deepStrictEqual([onNetwork?.kind, onNetwork?.mediaSize, onNetwork?.filename], ["document", FileServer.PDF.length, "Invoice 42.pdf"])
        const api = yield* gateway.client(acme.accountKey)
        const message = yield* api.messages.get({ path: { id } })
        assert.deepStrictEqual(
          [message.media?.kind, message.media?.size, message.media?.filename, message.media_skipped],
          ["document", FileServer.PDF.length, "Invoice 42.pdf", false]
        )
        const storage = yield* api.storage.get()
        assert.deepStrictEqual([storage.used_bytes, storage.files, storage.by_kind], [
          FileServer.PDF.length,
          1,
          [{ kind: "document", bytes: FileServer.PDF.length, files: 1 }]
        ])
        const link = yield* request(`${gateway.url}/api/v1/media/${id}?download=1`, { key: acme.accountKey })
        const file = yield* request(link.headers.get("location")!)
        assert.isTrue(file.body.equals(FileServer.PDF))
        assert.strictEqual(file.headers.get("content-disposition"), `attachment; filename="Invoice 42.pdf"`)
        const inline = yield* request(`${gateway.url}/api/v1/media/${id}`, { key: acme.accountKey })
        assert.strictEqual((yield* request(inline.headers.get("location")!)).headers.get("content-disposition"), `inline; filename="Invoice 42.pdf"`)
      }))

    it.scopedLive("a store that is down answers 503 storage_unavailable", () =>
      Effect.gen(function*() {
        const { gateway, store } = yield* suite(makeStore)
        const acme = yield* provision(gateway.ops)
        const { id } = yield* receive(gateway, acme.accountKey, acme.numbers[0]!.phone, { mimeType: "image/jpeg", bytes: bytes(100, 1) })
        yield* store.takeDown
        const answer = yield* request(`${gateway.url}/api/v1/media/${id}`, { key: acme.accountKey })
        assert.deepStrictEqual([answer.status, answer.json().code], [503, "storage_unavailable"])
        // An attachment reaches the network from the store: while it is down, none is sent.
        const files = yield* FileServer.start
        const send = yield* request(`${gateway.url}/api/v1/messages/send`, {
          key: acme.accountKey,
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ to: uniquePhone(), image: { url: files.url("/image.png") } })
        })
        assert.deepStrictEqual([send.status, send.json().code], [503, "storage_unavailable"])
        assert.deepStrictEqual(yield* gateway.sim.sent({ from: acme.numbers[0]!.phone }), [])
      }))
  })
}

describe("links signed by the gateway (filesystem store)", () => {
  it.scopedLive("expire after 15 minutes and refuse any change to the token", () =>
    Effect.gen(function*() {
      const { gateway } = yield* suite(MediaStores.filesystem)
      const acme = yield* provision(gateway.ops)
      const { id } = yield* receive(gateway, acme.accountKey, acme.numbers[0]!.phone, { mimeType: "image/jpeg", bytes: bytes(100, 1) })
      const issuedAt = Date.now()
      const location = (yield* request(`${gateway.url}/api/v1/media/${id}`, { key: acme.accountKey })).headers.get("location")!
      const token = location.slice(location.lastIndexOf("/") + 1)
      const [payload, signature] = token.split(".")

      // Tampered: another signature, or another payload under the old signature.
      const flipped = `${payload}.${signature!.slice(0, -2)}${signature!.endsWith("AA") ? "BB" : "AA"}`
      const forged = `${Buffer.from(JSON.stringify({ k: "media/1/1/1", x: 9999999999, d: "inline" })).toString("base64url")}.${signature}`
      for (const bad of [flipped, forged, "garbage"]) {
        const refused = yield* request(`${gateway.url}/files/${bad}`)
        assert.deepStrictEqual([refused.status, refused.json().code], [403, "link_invalid"])
      }

      // Clock-driven: the link works until 15 minutes after it was issued, and not from then on.
      const clock = ManualClock.make(issuedAt)
      const serveAt = (at: number) =>
        Effect.suspend(() => {
          clock.set(at)
          return Effect.either(gateway.blobs.serveSigned(token))
        }).pipe(Effect.withClock(clock.clock))
      assert.isTrue(Either.isRight(yield* serveAt(issuedAt + 14 * 60_000 + 58_000)))
      const expired = yield* serveAt(issuedAt + 15 * 60_000 + 2_000)
      assert.isTrue(Either.isLeft(expired) && expired.left._tag === "BlobLinkExpired")

      // Through HTTP, a link past its expiry is refused as expired.
      const claims = Either.getOrThrow(SignedLink.verify(MediaStores.SIGNING_SECRET, token, issuedAt / 1000))
      const stale = SignedLink.sign(MediaStores.SIGNING_SECRET, { ...claims, expiresAt: Math.floor(issuedAt / 1000) - 1 })
      const refused = yield* request(`${gateway.url}/files/${stale}`)
      assert.deepStrictEqual([refused.status, refused.json().code], [410, "link_expired"])
    }))
})
