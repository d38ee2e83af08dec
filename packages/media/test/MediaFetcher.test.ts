/**
 * Fetching attachment URLs against real HTTP servers on 127.0.0.1: kinds, types and names, the
 * size cap (announced and streamed, with the download cut short), time limit, HTTP failures,
 * redirects, URL rules, the private-address guard on every hop, the concurrency slot, and the
 * pure policies (address classes, sniffing and the type check, Content-Disposition) as tables.
 */
import { assert, describe, it } from "@effect/vitest"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import type * as Scope from "effect/Scope"
import * as http from "node:http"
import * as net from "node:net"
import type { FetchError, Options } from "../src/MediaFetcher.js"
import { make, MediaFetcher } from "../src/MediaFetcher.js"
import { fromContentDisposition } from "../src/MediaFetcherFilename.js"
import type { MediaKind } from "../src/MediaFetcherType.js"
import { check, isHtml, sniff } from "../src/MediaFetcherType.js"
import * as NodeBody from "../src/NodeBody.js"
import * as PrivateAddress from "../src/PrivateAddress.js"

// --- fixtures ---------------------------------------------------------------------------------

const bytesOf = (...parts: ReadonlyArray<string | ReadonlyArray<number> | Uint8Array>): Uint8Array =>
  new Uint8Array(parts.flatMap((part) => typeof part === "string" ? Array.from(part, (c) => c.charCodeAt(0)) : Array.from(part)))
const filler = (n: number, seed = 7) => Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) & 0xff)

const PNG = bytesOf("\x89PNG\r\n\x1a\n", filler(300))
const JPEG = bytesOf([0xff, 0xd8, 0xff, 0xe0], filler(200))
const WEBP = bytesOf("RIFF", [0x10, 0, 0, 0], "WEBPVP8 ", filler(50))
const GIF = bytesOf("GIF89a", filler(40))
// An Ogg page header (27 bytes, one segment) followed by the first packet.
const oggPage = (packet: string) => bytesOf("OggS", new Array(22).fill(0), [1, packet.length], packet, filler(100))
const OGG_OPUS = oggPage("OpusHead\x01\x02")
const OGG_VORBIS = oggPage("\x01vorbis")
const MP4 = bytesOf([0, 0, 0, 0x18], "ftypisom", filler(120))
const GP3 = bytesOf([0, 0, 0, 0x18], "ftyp3gp4", filler(120))
const M4A = bytesOf([0, 0, 0, 0x18], "ftypM4A ", filler(120))
const MP3_ID3 = bytesOf("ID3\x04\x00", filler(90))
const MP3_SYNC = bytesOf([0xff, 0xfb, 0x90, 0x64], filler(90))
const AAC = bytesOf([0xff, 0xf1, 0x50, 0x80], filler(90))
const AMR = bytesOf("#!AMR\n", filler(30))
const PDF = bytesOf("%PDF-1.7\n", filler(500))
const HTML = bytesOf("<!doctype html><title>Login</title>")
// An MP4 whose first box is not ftyp (older QuickTime writers), a HEIC photo, an AVIF image.
const MOOV = bytesOf([0, 0, 0x01, 0x00], "moov", filler(120))
const HEIC = bytesOf([0, 0, 0, 0x18], "ftypheic", [0, 0, 0, 0], "mif1heic", filler(120))
const AVIF = bytesOf([0, 0, 0, 0x1c], "ftypavif", [0, 0, 0, 0], "avifmif1miaf", filler(120))
// An ID3 tag of 20 bytes, then an ADTS frame: AAC, not MP3.
const AAC_ID3 = bytesOf("ID3\x04\x00\x00", [0, 0, 0, 20], new Array(20).fill(0), [0xff, 0xf1, 0x50, 0x80], filler(90))
// An ID3 tag longer than the bytes read (cover art): MP3.
const MP3_LONG_ID3 = bytesOf("ID3\x03\x00\x00", [0, 0, 0x10, 0], filler(90))
const ZIP = bytesOf("PK\x03\x04", filler(60))

// --- test servers -----------------------------------------------------------------------------

interface Seen {
  readonly path: string
  readonly host: string | undefined
  /** Resolves when the client's connection for this request closes. */
  readonly closed: Promise<void>
}

interface TestServer {
  readonly port: number
  readonly url: (path: string) => string
  readonly seen: Array<Seen>
}

type Handler = (req: http.IncomingMessage, res: http.ServerResponse, server: TestServer) => void

/** A node:http server on 127.0.0.1, closed (with its connections) with the scope. */
const serve = (handler: Handler): Effect.Effect<TestServer, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.async<readonly [http.Server, TestServer]>((resume) => {
      const seen: Array<Seen> = []
      const server = http.createServer((req, res) => {
        const closed = new Promise<void>((done) => req.socket.once("close", () => done()))
        seen.push({ path: req.url ?? "", host: req.headers.host, closed })
        handler(req, res, self)
      })
      const self: TestServer = {
        get port() {
          return (server.address() as net.AddressInfo).port
        },
        url: (path) => `http://127.0.0.1:${self.port}${path}`,
        seen
      }
      server.listen(0, "127.0.0.1", () => resume(Effect.succeed([server, self] as const)))
    }),
    ([server]) =>
      Effect.async<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  ).pipe(Effect.map(([, self]) => self))

const send = (body: Uint8Array, headers: http.OutgoingHttpHeaders = {}): Handler => (_req, res) => {
  res.writeHead(200, { "content-length": body.byteLength, ...headers })
  res.end(body)
}

/** What a streaming server managed to send before the client hung up, if it did. */
interface Pumped {
  sent: number
  finished: boolean
  readonly done: Promise<void>
}

/** Writes `total` bytes in 64 KiB chunks, respecting backpressure, until done or disconnected. */
const pump = (res: http.ServerResponse | net.Socket, total: number): Pumped => {
  const chunk = filler(64 * 1024)
  const state = { sent: 0, finished: false } as Pumped
  const mutable = state as { done: Promise<void> }
  mutable.done = (async () => {
    let gone = false
    res.once("close", () => (gone = true))
    res.on("error", () => (gone = true))
    while (!gone && state.sent < total) {
      const ok = res.write(chunk)
      state.sent += chunk.byteLength
      if (!ok) {
        await new Promise<void>((wake) => {
          res.once("drain", wake)
          res.once("close", wake)
        })
      }
    }
    if (!gone) {
      state.finished = true
      res.end()
    }
  })()
  return state
}

/** Waits for the client to hang up on a request; fails the test when it does not within 10 s (CI is loaded). */
const hungUp = (seen: Seen | undefined) =>
  Effect.promise(() => seen!.closed).pipe(
    Effect.timeoutFail({ duration: "10 seconds", onTimeout: () => new Error("the client kept the connection open") })
  )

/** The whole download, read to its end inside a scope of its own, with its bytes in hand. */
const fetchAll = (fetcher: Effect.Effect.Success<ReturnType<typeof make>>, url: string, kind: MediaKind) =>
  Effect.scoped(Effect.gen(function*() {
    const { announcedSize: _, body, ...file } = yield* fetcher.fetch(url, kind)
    const chunks = yield* Stream.runCollect(NodeBody.toStream(body))
    const bytes = new Uint8Array(Buffer.concat([...chunks]))
    return { bytes, ...file, size: bytes.byteLength }
  }))

const fetchWith = (options: Options, url: string, kind: MediaKind) =>
  Effect.flatMap(make(options), (fetcher) => fetchAll(fetcher, url, kind))

const open: Options = { allowPrivateAddresses: true, timeout: "5 seconds" }

interface Failure {
  readonly tag: string
  readonly error: string
  readonly retryAfter: number | undefined
}

/** The error as plain data; a success fails the test with a short message. */
const failure = (effect: Effect.Effect<unknown, FetchError>): Effect.Effect<Failure> =>
  Effect.matchEffect(effect, {
    onFailure: (e) => Effect.succeed({ tag: e._tag, error: e.error, retryAfter: e.retryAfter }),
    onSuccess: () => Effect.sync(() => assert.fail("expected the fetch to fail, and it succeeded"))
  })

const REFUSED: Failure = { tag: "InvalidMedia", error: "URL points to a private or local address", retryAfter: undefined }

// --- kinds, types, names ----------------------------------------------------------------------

describe("MediaFetcher.fetch", () => {
  it.scopedLive("fetches each kind with its bytes, type and name", () =>
    Effect.gen(function*() {
      const files: Record<string, readonly [Uint8Array, http.OutgoingHttpHeaders]> = {
        "/img": [PNG, { "content-type": "image/png", "content-disposition": "inline; filename=\"photo.png\"" }],
        "/files/x": [PDF, {
          "content-type": "application/pdf",
          // filename* wins over filename, in either order.
          "content-disposition": "attachment; filename=\"_____.pdf\"; filename*=UTF-8''%D0%9E%D1%82%D1%87%D1%91%D1%82%20%E2%84%962.pdf"
        }],
        "/notes/voice%20note%20%E2%9C%93.ogg": [OGG_OPUS, { "content-type": "audio/ogg; codecs=opus" }],
        "/v/clip.mp4?sig=abc": [MP4, { "content-type": "Video/MP4" }]
      }
      const server = yield* serve((req, res) => {
        const [body, headers] = files[req.url ?? ""] ?? [new Uint8Array(), {}]
        send(body, headers)(req, res, server)
      })
      const cases: ReadonlyArray<readonly [string, MediaKind, Uint8Array, string, string | null]> = [
        ["/img", "image", PNG, "image/png", "photo.png"],
        ["/files/x", "document", PDF, "application/pdf", "Отчёт №2.pdf"],
        ["/notes/voice%20note%20%E2%9C%93.ogg", "voice", OGG_OPUS, "audio/ogg", "voice note ✓.ogg"],
        ["/v/clip.mp4?sig=abc", "video", MP4, "video/mp4", "clip.mp4"]
      ]
      for (const [path, kind, body, mimeType, filename] of cases) {
        const file = yield* fetchWith(open, server.url(path), kind)
        assert.deepStrictEqual(file, { bytes: body, mimeType, filename, size: body.byteLength }, path)
        assert.strictEqual(Object.getPrototypeOf(file.bytes), Uint8Array.prototype)
      }
    }))

  it.scopedLive("sniffs the type when the server gives none or octet-stream", () =>
    Effect.gen(function*() {
      const bodies: Record<string, readonly [Uint8Array, string | undefined]> = {
        "/a": [JPEG, "application/octet-stream"],
        "/b": [WEBP, undefined],
        "/c": [MP4, "binary/octet-stream"],
        "/d": [GP3, undefined],
        "/e": [MP3_ID3, "application/octet-stream; charset=binary"],
        "/f": [M4A, undefined],
        "/g": [PDF, "application/octet-stream"],
        "/h": [filler(64), undefined],
        "/i": [MP4, undefined]
      }
      const server = yield* serve((req, res) => {
        const [body, type] = bodies[req.url ?? ""]!
        // No Content-Type header at all when there is none: node would not add one either.
        send(body, type === undefined ? {} : { "content-type": type })(req, res, server)
      })
      const cases: ReadonlyArray<readonly [string, MediaKind, string]> = [
        ["/a", "image", "image/jpeg"],
        ["/b", "image", "image/webp"],
        ["/c", "video", "video/mp4"],
        ["/d", "video", "video/3gpp"],
        ["/e", "voice", "audio/mpeg"],
        ["/f", "voice", "audio/mp4"],
        ["/g", "document", "application/pdf"],
        ["/h", "document", "application/octet-stream"],
        ["/i", "voice", "audio/mp4"]
      ]
      for (const [path, kind, mimeType] of cases) {
        const file = yield* fetchWith(open, server.url(path), kind)
        assert.strictEqual(file.mimeType, mimeType, path)
      }
    }))

  it.scopedLive("names the file null when neither header nor path gives a name", () =>
    Effect.gen(function*() {
      const server = yield* serve(send(PDF, { "content-type": "application/pdf" }))
      const file = yield* fetchWith(open, server.url("/docs/"), "document")
      assert.strictEqual(file.filename, null)
      const root = yield* fetchWith(open, server.url("/"), "document")
      assert.strictEqual(root.filename, null)
    }))

  it.scopedLive("refuses a file whose type does not fit the kind, and an empty one", () =>
    Effect.gen(function*() {
      const bodies: Record<string, readonly [Uint8Array, string | undefined]> = {
        "/login": [HTML, "text/html; charset=utf-8"],
        "/gif": [GIF, "image/gif"],
        "/png": [PNG, "image/png"],
        "/vorbis": [OGG_VORBIS, "audio/ogg"],
        "/unknown": [filler(64), "application/octet-stream"],
        "/empty": [new Uint8Array(), "image/png"]
      }
      const server = yield* serve((req, res) => {
        const [body, type] = bodies[req.url ?? ""]!
        send(body, type === undefined ? {} : { "content-type": type })(req, res, server)
      })
      const cases: ReadonlyArray<readonly [string, MediaKind, RegExp]> = [
        ["/login", "image", /^Expected an image .*, got text\/html$/],
        ["/gif", "image", /got image\/gif$/],
        ["/png", "video", /^Expected a video .*, got image\/png$/],
        ["/png", "voice", /^Expected a voice note .*, got image\/png$/],
        ["/vorbis", "voice", /not Opus/],
        ["/unknown", "image", /got a file of unknown type/],
        ["/empty", "image", /empty/]
      ]
      for (const [path, kind, message] of cases) {
        const e = yield* failure(fetchWith(open, server.url(path), kind))
        assert.strictEqual(e.tag, "InvalidMedia", path)
        assert.match(e.error, message, path)
      }
    }))

  // --- size cap -------------------------------------------------------------------------------

  it.scopedLive("fails on an announced length above the cap without waiting for the body", () =>
    Effect.gen(function*() {
      let bodyWritten = false
      const server = yield* serve((_req, res) => {
        res.writeHead(200, { "content-type": "image/png", "content-length": 6 * 1024 * 1024 })
        res.flushHeaders()
        // The body would come only after a second; the client must not wait for it.
        let gone = false
        res.once("close", () => (gone = true))
        setTimeout(() => {
          if (!gone) {
            bodyWritten = true
            res.end(filler(6 * 1024 * 1024))
          }
        }, 10_000).unref()
      })
      const started = Date.now()
      const e = yield* failure(fetchWith(open, server.url("/big.png"), "image"))
      assert.deepStrictEqual(e, { tag: "MediaTooLarge", error: "The file is larger than the 5 MB limit", retryAfter: undefined })
      // Refused on the announced length, long before the body would come (10 s).
      assert.isBelow(Date.now() - started, 5000)
      yield* hungUp(server.seen[0])
      assert.isFalse(bodyWritten)
    }))

  it.scopedLive("aborts a chunked body without a length once it passes the cap", () =>
    Effect.gen(function*() {
      const total = 64 * 1024 * 1024
      let pumped: Pumped | undefined
      const server = yield* serve((_req, res) => {
        res.writeHead(200, { "content-type": "application/pdf" })
        pumped = pump(res, total)
      })
      const e = yield* failure(fetchWith({ ...open, maxBytes: { document: 100_000 } }, server.url("/huge.pdf"), "document"))
      assert.deepStrictEqual(e, { tag: "MediaTooLarge", error: "The file is larger than the 100,000 bytes limit", retryAfter: undefined })
      yield* Effect.promise(() => pumped!.done)
      assert.isFalse(pumped!.finished)
      assert.isBelow(pumped!.sent, total / 2)
    }))

  it.scopedLive("aborts a body read until the connection closes once it passes the cap", () =>
    Effect.gen(function*() {
      // HTTP/1.0 without Content-Length: the body is whatever comes until the server closes.
      const total = 64 * 1024 * 1024
      let pumped: Pumped | undefined
      const server = yield* Effect.acquireRelease(
        Effect.async<net.Server>((resume) => {
          const s = net.createServer((socket) => {
            socket.once("data", () => {
              socket.write("HTTP/1.0 200 OK\r\ncontent-type: video/mp4\r\n\r\n")
              socket.write(MP4)
              pumped = pump(socket, total)
            })
          })
          s.listen(0, "127.0.0.1", () => resume(Effect.succeed(s)))
        }),
        (s) => Effect.async<void>((resume) => void s.close(() => resume(Effect.void)))
      )
      const port = (server.address() as net.AddressInfo).port
      const e = yield* failure(fetchWith({ ...open, maxBytes: { video: 200_000 } }, `http://127.0.0.1:${port}/v.mp4`, "video"))
      assert.strictEqual(e.tag, "MediaTooLarge")
      yield* Effect.promise(() => pumped!.done)
      assert.isFalse(pumped!.finished)
      assert.isBelow(pumped!.sent, total / 2)
    }))

  it.scopedLive("reads no more than a server announces, whatever it sends after", () =>
    Effect.gen(function*() {
      const total = 64 * 1024 * 1024
      let pumped: Pumped | undefined
      const server = yield* Effect.acquireRelease(
        Effect.async<net.Server>((resume) => {
          const s = net.createServer((socket) => {
            socket.once("data", () => {
              socket.write(`HTTP/1.1 200 OK\r\ncontent-type: application/pdf\r\ncontent-length: ${PDF.byteLength}\r\n\r\n`)
              socket.write(PDF)
              pumped = pump(socket, total)
            })
          })
          s.listen(0, "127.0.0.1", () => resume(Effect.succeed(s)))
        }),
        (s) => Effect.async<void>((resume) => void s.close(() => resume(Effect.void)))
      )
      const port = (server.address() as net.AddressInfo).port
      const file = yield* fetchWith({ ...open, maxBytes: { document: 100_000 } }, `http://127.0.0.1:${port}/a.pdf`, "document")
      assert.deepStrictEqual(file.bytes, PDF)
      yield* Effect.promise(() => pumped!.done)
      assert.isFalse(pumped!.finished)
    }))

  // --- time, HTTP and network failures --------------------------------------------------------

  it.scopedLive("gives up after the time limit, headers or body pending, and closes the connection", () =>
    Effect.gen(function*() {
      const server = yield* serve((req, res) => {
        if (req.url === "/slow-body") {
          res.writeHead(200, { "content-type": "image/png", "content-length": PNG.byteLength })
          res.write(PNG.subarray(0, 10))
        }
        // Otherwise: never answer.
      })
      for (const [index, path] of ["/hang", "/slow-body"].entries()) {
        const started = Date.now()
        const e = yield* failure(fetchWith({ ...open, timeout: "300 millis" }, server.url(path), "image"))
        const elapsed = Date.now() - started
        assert.strictEqual(e.tag, "MediaFetchFailed", path)
        assert.match(e.error, /took longer than 300ms/, path)
        assert.isAtLeast(elapsed, 290, path)
        // Ended by the timeout, not by waiting for ever (generous for a busy machine).
        assert.isBelow(elapsed, 10_000, path)
        // The server sees the client go away.
        yield* hungUp(server.seen[index])
      }
    }))

  it.scopedLive("gives up after the time limit while the rest of the body is read, and closes the connection", () =>
    Effect.gen(function*() {
      // The first bytes come at once (the type is checked on them), then nothing.
      const server = yield* serve((_req, res) => {
        const first = bytesOf(PDF, filler(4096))
        res.writeHead(200, { "content-type": "application/pdf", "content-length": first.byteLength * 4 })
        res.write(first)
      })
      const started = Date.now()
      const e = yield* failure(fetchWith({ ...open, timeout: "300 millis" }, server.url("/stalled"), "document"))
      const elapsed = Date.now() - started
      assert.strictEqual(e.tag, "MediaFetchFailed")
      assert.match(e.error, /took longer than 300ms/)
      assert.isAtLeast(elapsed, 290)
      assert.isBelow(elapsed, 10_000)
      yield* hungUp(server.seen[0])
    }))

  it.scopedLive("reports a status other than 2xx", () =>
    Effect.gen(function*() {
      const server = yield* serve((req, res) => {
        const status = Number(req.url!.slice(1))
        res.writeHead(status, { "content-type": "image/png" })
        res.end(PNG)
      })
      for (const status of [404, 403, 500, 304, 300]) {
        const e = yield* failure(fetchWith(open, server.url(`/${status}`), "image"))
        assert.strictEqual(e.tag, "MediaFetchFailed")
        assert.include(e.error, `HTTP ${status}`)
      }
    }))

  it.scopedLive("reports a refused connection and a name that does not resolve", () =>
    Effect.gen(function*() {
      const port = yield* Effect.async<number>((resume) => {
        const s = net.createServer().listen(0, "127.0.0.1", () => {
          const { port } = s.address() as net.AddressInfo
          s.close(() => resume(Effect.succeed(port)))
        })
      })
      const refused = yield* failure(fetchWith(open, `http://127.0.0.1:${port}/a.png`, "image"))
      assert.deepStrictEqual(refused, {
        tag: "MediaFetchFailed",
        error: `Connection to 127.0.0.1:${port} was refused`,
        retryAfter: undefined
      })
      const unresolved = yield* failure(
        fetchWith({ ...open, resolve: () => Effect.fail("ENOTFOUND") }, "https://nowhere.test/a.png", "image")
      )
      assert.deepStrictEqual(unresolved, { tag: "MediaFetchFailed", error: "Could not resolve nowhere.test", retryAfter: undefined })
    }))

  it.scopedLive("reports a TLS failure", () =>
    Effect.gen(function*() {
      // A plain HTTP server spoken to over https: the handshake fails.
      const server = yield* serve(send(PNG, { "content-type": "image/png" }))
      const e = yield* failure(fetchWith(open, `https://127.0.0.1:${server.port}/a.png`, "image"))
      assert.strictEqual(e.tag, "MediaFetchFailed")
      assert.match(e.error, /^(TLS error|Could not fetch|Connection to .* was reset)/)
    }))

  it.scopedLive("closes the connection when interrupted", () =>
    Effect.gen(function*() {
      const server = yield* serve(() => {})
      const fiber = yield* Effect.fork(fetchWith(open, server.url("/hang"), "image"))
      while (server.seen.length === 0) yield* Effect.sleep("10 millis")
      yield* Fiber.interrupt(fiber)
      yield* hungUp(server.seen[0])
    }))

  // --- redirects ------------------------------------------------------------------------------

  it.scopedLive("follows up to three redirects, re-resolving relative locations", () =>
    Effect.gen(function*() {
      const server = yield* serve((req, res) => {
        const url = new URL(req.url!, "http://x")
        const left = Number(url.searchParams.get("n"))
        if (url.pathname === "/go" && left > 0) {
          const next = left === 1 ? "/final/pic%201.png" : `/go?n=${left - 1}`
          res.writeHead([301, 302, 303, 307, 308][left % 5]!, { location: next })
          return res.end()
        }
        if (url.pathname === "/away") {
          res.writeHead(302, { location: url.searchParams.get("to")! })
          return res.end()
        }
        send(PNG, { "content-type": "image/png" })(req, res, server)
      })
      const file = yield* fetchWith(open, server.url("/go?n=3"), "image")
      assert.deepStrictEqual([file.mimeType, file.filename], ["image/png", "pic 1.png"])
      assert.deepStrictEqual(server.seen.map((s) => s.path), ["/go?n=3", "/go?n=2", "/go?n=1", "/final/pic%201.png"])

      const tooMany = yield* failure(fetchWith(open, server.url("/go?n=4"), "image"))
      assert.deepStrictEqual(tooMany, { tag: "MediaFetchFailed", error: "The URL redirected more than 3 times", retryAfter: undefined })
      assert.strictEqual(server.seen.length, 4 + 4)

      for (const to of ["ftp://127.0.0.1/a.png", "file:///etc/passwd", "gopher://127.0.0.1:70/", "data:image/png;base64,AAAA"]) {
        const e = yield* failure(fetchWith(open, server.url(`/away?to=${encodeURIComponent(to)}`), "image"))
        assert.strictEqual(e.tag, "InvalidMedia", to)
        assert.match(e.error, /^URL must be http or https/, to)
      }
    }))

  // --- URL rules ------------------------------------------------------------------------------

  it.effect("refuses URLs that are not absolute http(s) without credentials, or too long", () =>
    Effect.gen(function*() {
      let resolved = 0
      const options: Options = { resolve: () => Effect.sync(() => (resolved++, ["93.184.216.34"])), timeout: "1 second" }
      const long = `https://example.com/${"a".repeat(2048 - 20)}`
      const cases: ReadonlyArray<readonly [string, RegExp]> = [
        ["ftp://example.com/a.png", /not ftp$/],
        ["file:///etc/passwd", /not file$/],
        ["javascript:alert(1)", /not javascript$/],
        ["/relative/a.png", /absolute/],
        ["example.com/a.png", /absolute/],
        ["", /absolute/],
        ["http://", /absolute/],
        ["http://user:pass@example.com/a.png", /user name or password/],
        ["https://user@example.com/a.png", /user name or password/],
        [`${long}b`, /longer than 2048/],
        [`https://example.com/${"é".repeat(700)}`, /longer than 2048/]
      ]
      assert.strictEqual(long.length, 2048)
      for (const [url, message] of cases) {
        const e = yield* failure(fetchWith(options, url, "image"))
        assert.strictEqual(e.tag, "InvalidMedia", url)
        assert.match(e.error, message, url)
      }
      assert.strictEqual(resolved, 0)
    }))

  // --- private-address guard ------------------------------------------------------------------

  it.scopedLive("refuses private and local addresses before connecting", () =>
    Effect.gen(function*() {
      const server = yield* serve(send(PNG, { "content-type": "image/png" }))
      const port = server.port
      const looked: Array<string> = []
      const names: Record<string, ReadonlyArray<string>> = {
        "public.example": ["127.0.0.1"],
        "mixed.example": ["93.184.216.34", "10.1.2.3"],
        "v6.example": ["fd00::1"],
        "mapped.example": ["::ffff:192.168.1.1"]
      }
      const guarded: Options = {
        timeout: "1 second",
        resolve: (name) => Effect.sync(() => (looked.push(name), names[name] ?? []))
      }
      const urls = [
        `http://127.0.0.1:${port}/a.png`,
        `http://127.1:${port}/a.png`,
        `http://2130706433:${port}/a.png`,
        `http://0x7f000001:${port}/a.png`,
        `http://localhost:${port}/a.png`,
        `http://LOCALHOST.:${port}/a.png`,
        `http://media.localhost:${port}/a.png`,
        `http://[::1]:${port}/a.png`,
        `http://[::ffff:127.0.0.1]:${port}/a.png`,
        `http://[::ffff:7f00:1]:${port}/a.png`,
        `http://[64:ff9b::a00:1]/a.png`,
        `http://[fe80::1]/a.png`,
        `http://[fd12:3456::1]/a.png`,
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.1/a.png",
        "http://172.16.5.4/a.png",
        "http://192.168.0.1/a.png",
        "http://100.64.0.1/a.png",
        "http://0.0.0.0/a.png",
        "http://255.255.255.255/a.png",
        "http://224.0.0.1/a.png",
        "http://240.0.0.1/a.png",
        `http://public.example:${port}/a.png`,
        "https://mixed.example/a.png",
        "https://v6.example/a.png",
        "https://mapped.example/a.png"
      ]
      for (const url of urls) {
        assert.deepStrictEqual(yield* failure(fetchWith(guarded, url, "image")), REFUSED, url)
      }
      assert.deepStrictEqual(server.seen, [])
      // Names are judged by what they resolve to; localhost never needs asking.
      assert.deepStrictEqual(looked, ["public.example", "mixed.example", "v6.example", "mapped.example"])
      // The same server is reachable once the guard is off: the refusals above are the guard's.
      const allowed = yield* fetchWith({ ...guarded, allowPrivateAddresses: true }, `http://public.example:${port}/a.png`, "image")
      assert.deepStrictEqual(allowed.bytes, PNG)
    }))

  it.scopedLive("connects to the address it checked, not to a fresh lookup, sending the URL's host", () =>
    Effect.gen(function*() {
      const server = yield* serve(send(PNG, { "content-type": "image/png" }))
      let lookups = 0
      // A rebinding resolver: the first answer is the one that must be used.
      const resolve = () => Effect.sync(() => (lookups++ === 0 ? ["127.0.0.1"] : ["203.0.113.7"]))
      const file = yield* fetchWith({ ...open, resolve }, `http://cdn.example:${server.port}/a.png`, "image")
      assert.deepStrictEqual(file.bytes, PNG)
      assert.strictEqual(lookups, 1)
      assert.strictEqual(server.seen[0]!.host, `cdn.example:${server.port}`)
    }))

  it.scopedLive("checks every redirect hop: an allowed host cannot redirect inside", () =>
    Effect.gen(function*() {
      const server = yield* serve((req, res) => {
        const url = new URL(req.url!, "http://x")
        if (url.pathname === "/start") {
          res.writeHead(302, { location: url.searchParams.get("to")!.replace("PORT", String(server.port)) })
          return res.end()
        }
        send(PNG, { "content-type": "image/png" })(req, res, server)
      })
      // media.test is an operator-allowed internal host; everything else goes through the guard.
      const options: Options = {
        timeout: "2 seconds",
        allowHosts: ["media.test"],
        resolve: (name) => Effect.succeed(name === "media.test" || name === "other.test" ? ["127.0.0.1"] : [])
      }
      const start = (to: string) => `http://media.test:${server.port}/start?to=${encodeURIComponent(to)}`

      // Control: a redirect that stays on the allowed host is followed to the file.
      const followed = yield* fetchWith(options, start("http://media.test:PORT/pic.png"), "image")
      assert.deepStrictEqual(followed.bytes, PNG)
      assert.deepStrictEqual(server.seen.map((s) => s.path), [`/start?to=${encodeURIComponent("http://media.test:PORT/pic.png")}`, "/pic.png"])

      for (const to of ["http://other.test:PORT/pic.png", "http://127.0.0.1:PORT/pic.png", "http://localhost:PORT/pic.png", "http://169.254.169.254/latest/"]) {
        server.seen.length = 0
        assert.deepStrictEqual(yield* failure(fetchWith(options, start(to), "image")), REFUSED, to)
        // Only the first hop reached the server; the file behind the redirect was never asked for.
        assert.deepStrictEqual(server.seen.map((s) => s.path.split("?")[0]), ["/start"], to)
      }
    }))

  // --- concurrency ----------------------------------------------------------------------------

  it.scopedLive("answers Busy at once when every download slot is taken, and frees the slot after", () =>
    Effect.gen(function*() {
      let release: () => void = () => {}
      const server = yield* serve((req, res) => {
        if (req.url === "/missing") {
          res.writeHead(404)
          return res.end()
        }
        if (req.url === "/held") {
          release = () => send(PNG, { "content-type": "image/png" })(req, res, server)
          return
        }
        send(PNG, { "content-type": "image/png" })(req, res, server)
      })
      const fetcher = yield* make({ ...open, maxConcurrent: 1 })
      const held = yield* Effect.fork(fetchAll(fetcher, server.url("/held"), "image"))
      while (server.seen.length === 0) yield* Effect.sleep("5 millis")

      const started = Date.now()
      const busy = yield* failure(fetchAll(fetcher, server.url("/other"), "image"))
      assert.deepStrictEqual(busy, { tag: "Busy", error: "The server is receiving many large files", retryAfter: 5 })
      // Refused at once, not queued behind the held download (which never ends).
      assert.isBelow(Date.now() - started, 5000)
      assert.strictEqual(server.seen.length, 1)

      release()
      assert.deepStrictEqual((yield* Fiber.join(held)).bytes, PNG)
      assert.deepStrictEqual((yield* fetchAll(fetcher, server.url("/other"), "image")).bytes, PNG)

      // A failed download frees its slot too.
      assert.strictEqual((yield* failure(fetchAll(fetcher, server.url("/missing"), "image"))).tag, "MediaFetchFailed")
      assert.deepStrictEqual((yield* fetchAll(fetcher, server.url("/again"), "image")).bytes, PNG)
    }))

  // --- configuration --------------------------------------------------------------------------

  it.scopedLive("layerConfig reads MEDIA_* settings and guards by default", () =>
    Effect.gen(function*() {
      const server = yield* serve(send(PNG, { "content-type": "image/png" }))
      const withEnv = (env: Record<string, string>) =>
        Layer.provide(MediaFetcher.layerConfig, Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))))
      const fetchIn = (env: Record<string, string>) =>
        Effect.flatMap(MediaFetcher, (f) => fetchAll(f, server.url("/a.png"), "image")).pipe(Effect.provide(Layer.orDie(withEnv(env))))

      assert.deepStrictEqual(yield* failure(fetchIn({})), REFUSED)
      assert.deepStrictEqual((yield* fetchIn({ MEDIA_ALLOW_PRIVATE_URLS: "true" })).bytes, PNG)
      const capped = yield* failure(fetchIn({ MEDIA_ALLOW_PRIVATE_URLS: "true", MEDIA_MAX_BYTES: "100" }))
      assert.deepStrictEqual(capped, { tag: "MediaTooLarge", error: "The file is larger than the 100 bytes limit", retryAfter: undefined })
      const invalid = yield* Effect.flip(Layer.build(withEnv({ MEDIA_MAX_CONCURRENT: "0" })))
      assert.include(String(invalid), "MEDIA_MAX_CONCURRENT must be a positive integer")
    }))
})

// --- pure policies ----------------------------------------------------------------------------

describe("PrivateAddress.isPrivate", () => {
  const cases: ReadonlyArray<readonly [string, boolean]> = [
    ["8.8.8.8", false],
    ["93.184.216.34", false],
    ["100.63.255.255", false],
    ["100.128.0.0", false],
    ["172.15.255.255", false],
    ["172.32.0.0", false],
    ["169.253.255.255", false],
    ["223.255.255.255", false],
    ["0.0.0.0", true],
    ["0.1.2.3", true],
    ["10.0.0.1", true],
    ["100.64.0.1", true],
    ["100.127.255.255", true],
    ["127.0.0.1", true],
    ["127.255.255.254", true],
    ["169.254.169.254", true],
    ["172.16.0.1", true],
    ["172.31.255.255", true],
    ["192.0.0.8", true],
    ["192.0.2.1", true],
    ["192.168.1.1", true],
    ["198.18.0.1", true],
    ["198.51.100.1", true],
    ["203.0.113.1", true],
    ["224.0.0.1", true],
    ["239.255.255.250", true],
    ["240.0.0.1", true],
    ["255.255.255.255", true],
    ["2606:4700:4700::1111", false],
    ["2001:4860:4860::8888", false],
    ["2a00:1450:4001:80b::200e", false],
    ["::ffff:8.8.8.8", false],
    ["64:ff9b::808:808", false],
    ["2002:808:808::1", false],
    ["::", true],
    ["::1", true],
    ["[::1]", true],
    ["0:0:0:0:0:0:0:1", true],
    ["::ffff:127.0.0.1", true],
    ["::ffff:7f00:1", true],
    ["::ffff:10.0.0.1", true],
    ["::ffff:169.254.169.254", true],
    ["::127.0.0.1", true],
    ["64:ff9b::10.0.0.1", true],
    ["64:ff9b::a9fe:a9fe", true],
    ["64:ff9b:1::1", true],
    ["2002:a00:1::1", true],
    ["2002:7f00:1::", true],
    ["fc00::1", true],
    ["fd00:ec2::254", true],
    ["fe80::1", true],
    ["fe80::1%eth0", true],
    ["febf::1", true],
    ["fec0::1", true],
    ["ff02::1", true],
    ["100::1", true],
    ["2001:db8::1", true],
    ["2001::1", true],
    ["3fff::1", true],
    ["localhost", true],
    ["example.com", true],
    ["1.2.3", true],
    ["1::2::3", true]
  ]
  for (const [address, expected] of cases) {
    it(`${address} ${expected ? "is" : "is not"} private`, () => {
      assert.strictEqual(PrivateAddress.isPrivate(address), expected)
    })
  }

  it("knows localhost names", () => {
    assert.deepStrictEqual(
      ["localhost", "LocalHost.", "a.b.localhost", "localhost.example", "notlocalhost"].map(PrivateAddress.isLocalHostname),
      [true, true, true, false, false]
    )
  })
})

describe("MediaFetcherType.sniff", () => {
  const cases: ReadonlyArray<readonly [string, Uint8Array, MediaKind, string | undefined]> = [
    ["JPEG", JPEG, "image", "image/jpeg"],
    ["PNG", PNG, "image", "image/png"],
    ["WebP", WEBP, "image", "image/webp"],
    ["GIF", GIF, "image", "image/gif"],
    ["MP4", MP4, "video", "video/mp4"],
    ["MP4 asked as voice", MP4, "voice", "audio/mp4"],
    ["M4A", M4A, "document", "audio/mp4"],
    ["3GP", GP3, "video", "video/3gpp"],
    ["OGG", OGG_OPUS, "voice", "audio/ogg"],
    ["MP3 with ID3", MP3_ID3, "voice", "audio/mpeg"],
    ["MP3 frame", MP3_SYNC, "voice", "audio/mpeg"],
    ["AAC ADTS", AAC, "voice", "audio/aac"],
    ["AMR", AMR, "voice", "audio/amr"],
    ["PDF", PDF, "document", "application/pdf"],
    ["MP4 starting with moov", MOOV, "video", "video/mp4"],
    ["MP4 starting with moov asked as voice", MOOV, "voice", "audio/mp4"],
    ["HEIC", HEIC, "image", "image/heif"],
    ["HEIC asked as voice", HEIC, "voice", "image/heif"],
    ["AVIF", AVIF, "image", "image/avif"],
    ["AAC after an ID3 tag", AAC_ID3, "voice", "audio/aac"],
    ["MP3 with an ID3 tag longer than the head", MP3_LONG_ID3, "voice", "audio/mpeg"],
    ["HTML", HTML, "document", undefined],
    ["short", bytesOf([0xff]), "image", undefined],
    ["empty", new Uint8Array(), "image", undefined]
  ]
  for (const [name, bytes, kind, expected] of cases) {
    it(name, () => {
      assert.strictEqual(sniff(bytes, kind), expected)
    })
  }
})

describe("MediaFetcherType.isHtml", () => {
  const cases: ReadonlyArray<readonly [string, boolean]> = [
    ["<!doctype html><title>x</title>", true],
    ["\uFEFF\r\n  <!DOCTYPE HTML>", true],
    ["\n<html lang=\"en\">", true],
    ["<?xml version=\"1.0\"?><svg/>", false],
    ["{\"error\":\"not found\"}", false],
    ["", false]
  ]
  for (const [text, expected] of cases) {
    it(JSON.stringify(text), () => {
      assert.strictEqual(isHtml(new TextEncoder().encode(text)), expected)
    })
  }
})

describe("MediaFetcherType.check", () => {
  const IMAGE = "Expected an image (JPEG, PNG or WebP)"
  const cases: ReadonlyArray<readonly [string, MediaKind, string | undefined, Uint8Array, { mimeType: string } | { mismatch: string }]> = [
    // The header agrees with the bytes.
    ["image/png of a PNG", "image", "image/png", PNG, { mimeType: "image/png" }],
    ["image/jpg of a JPEG", "image", "image/jpg; charset=binary", JPEG, { mimeType: "image/jpeg" }],
    ["video/mp4 of an MP4", "video", "video/mp4", MP4, { mimeType: "video/mp4" }],
    ["video/mp4 of an MP4 starting with moov", "video", "video/mp4", MOOV, { mimeType: "video/mp4" }],
    ["audio/mpeg of an ID3 MP3", "voice", "audio/mpeg", MP3_ID3, { mimeType: "audio/mpeg" }],
    ["audio/mpeg of a bare MP3", "voice", "audio/mpeg", MP3_SYNC, { mimeType: "audio/mpeg" }],
    ["audio/ogg of Opus", "voice", "audio/ogg; codecs=opus", OGG_OPUS, { mimeType: "audio/ogg" }],
    // The header names another type the kind takes: the bytes' type is sent.
    ["image/jpeg of a PNG", "image", "image/jpeg", PNG, { mimeType: "image/png" }],
    ["image/png of a WebP", "image", "image/png", WEBP, { mimeType: "image/webp" }],
    ["video/mp4 of a 3GP", "video", "video/mp4", GP3, { mimeType: "video/3gpp" }],
    ["audio/mpeg of AAC", "voice", "audio/mpeg", AAC, { mimeType: "audio/aac" }],
    ["audio/aac of an ID3 MP3", "voice", "audio/aac", MP3_ID3, { mimeType: "audio/mpeg" }],
    ["audio/mpeg of an M4A", "voice", "audio/mpeg", M4A, { mimeType: "audio/mp4" }],
    ["text/plain of a PNG", "image", "text/plain", PNG, { mimeType: "image/png" }],
    ["no header, a JPEG", "image", undefined, JPEG, { mimeType: "image/jpeg" }],
    // The header names a type the kind takes, the bytes are none of the kind's.
    ["image/jpeg of an HTML page", "image", "image/jpeg", HTML, {
      mismatch: `${IMAGE}; the server said image/jpeg, but the file is an HTML page`
    }],
    ["image/jpeg of unknown bytes", "image", "image/jpeg", filler(64), {
      mismatch: `${IMAGE}; the server said image/jpeg, but the file is not one`
    }],
    ["image/jpeg of a PDF", "image", "image/jpeg", PDF, {
      mismatch: `${IMAGE}; the server said image/jpeg, but the file is application/pdf`
    }],
    ["image/png of a GIF", "image", "image/png", GIF, { mismatch: `${IMAGE}; the server said image/png, but the file is image/gif` }],
    ["image/jpeg of a HEIC photo", "image", "image/jpeg", HEIC, {
      mismatch: `${IMAGE}; the server said image/jpeg, but the file is image/heif`
    }],
    ["video/mp4 of a PNG", "video", "video/mp4", PNG, {
      mismatch: "Expected a video (MP4 or 3GP); the server said video/mp4, but the file is image/png"
    }],
    ["video/mp4 of an M4A", "video", "video/mp4", M4A, {
      mismatch: "Expected a video (MP4 or 3GP); the server said video/mp4, but the file is audio/mp4"
    }],
    ["audio/mpeg of a ZIP", "voice", "audio/mpeg", ZIP, {
      mismatch: "Expected a voice note (OGG/Opus, MP3, M4A, AAC or AMR); the server said audio/mpeg, but the file is application/zip"
    }],
    // Nothing the kind takes, as before.
    ["text/html of an HTML page", "image", "text/html; charset=utf-8", HTML, { mismatch: `${IMAGE}, got text/html` }],
    ["image/gif of a GIF", "image", "image/gif", GIF, { mismatch: `${IMAGE}, got image/gif` }],
    ["no header, a PDF", "image", undefined, PDF, { mismatch: `${IMAGE}, got application/pdf` }],
    ["octet-stream of an HTML page", "image", "application/octet-stream", HTML, { mismatch: `${IMAGE}, got an HTML page` }],
    ["octet-stream of unknown bytes", "image", "application/octet-stream", filler(64), {
      mismatch: `${IMAGE}, got a file of unknown type`
    }],
    // An Ogg stream must be Opus, whatever it is called.
    ["audio/ogg of Vorbis", "voice", "audio/ogg", OGG_VORBIS, {
      mismatch: "Expected a voice note (OGG/Opus, MP3, M4A, AAC or AMR), got audio/ogg that is not Opus"
    }],
    ["audio/mpeg of Vorbis", "voice", "audio/mpeg", OGG_VORBIS, {
      mismatch: "Expected a voice note (OGG/Opus, MP3, M4A, AAC or AMR), got audio/ogg that is not Opus"
    }],
    // A document: the header, else the sniffed type, else octet-stream.
    ["document: the header wins", "document", "image/jpeg", PNG, { mimeType: "image/jpeg" }],
    ["document: text/html of an HTML page", "document", "text/html", HTML, { mimeType: "text/html" }],
    ["document: sniffed without a header", "document", undefined, PDF, { mimeType: "application/pdf" }],
    ["document: sniffed under octet-stream", "document", "application/octet-stream", ZIP, { mimeType: "application/zip" }],
    ["document: unknown", "document", undefined, HTML, { mimeType: "application/octet-stream" }]
  ]
  for (const [name, kind, header, bytes, expected] of cases) {
    it(name, () => {
      assert.deepStrictEqual(check(kind, header, bytes), expected)
    })
  }
})

describe("MediaFetcherFilename.fromContentDisposition", () => {
  const cases: ReadonlyArray<readonly [string, string | undefined]> = [
    ["attachment; filename=\"report.pdf\"", "report.pdf"],
    ["attachment; filename=report.pdf", "report.pdf"],
    ["inline;filename=\"a; b.pdf\"", "a; b.pdf"],
    ["attachment; filename=\"say \\\"hi\\\".txt\"", "say \"hi\".txt"],
    ["attachment; filename*=UTF-8''%D0%A4%D0%BE%D1%82%D0%BE.jpg; filename=\"____.jpg\"", "Фото.jpg"],
    ["attachment; filename=\"____.jpg\"; FILENAME*=utf-8'ru'%D0%A4%D0%BE%D1%82%D0%BE.jpg", "Фото.jpg"],
    ["attachment; filename*=iso-8859-1'en'caf%E9.txt", "café.txt"],
    // An undecodable filename* falls back to filename.
    ["attachment; filename*=UTF-8''%FF%FE.txt; filename=\"plain.txt\"", "plain.txt"],
    ["attachment; filename*=koi8-r''%C6.txt; filename=\"plain.txt\"", "plain.txt"],
    ["attachment", undefined],
    ["", undefined]
  ]
  for (const [header, expected] of cases) {
    it(header || "(empty)", () => {
      assert.strictEqual(fromContentDisposition(header), expected)
    })
  }
})
