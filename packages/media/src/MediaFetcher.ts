/**
 * Downloading the file behind an attachment URL of POST /messages/send, safely: only http(s), never
 * to the gateway's own network (checked on the address actually connected to, on every redirect),
 * within a size cap per kind and a time limit, a few downloads at a time.
 *
 * @since 1.0.0
 */
import { Busy, InvalidMedia, MediaFetchFailed, MediaTooLarge } from "@wagate/domain/ApiError"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as GuardedHttp from "./GuardedHttp.js"
import { filename } from "./MediaFetcherFilename.js"
import * as MediaFetcherRequest from "./MediaFetcherRequest.js"
import * as MediaFetcherType from "./MediaFetcherType.js"
import type { MediaKind } from "./MediaFetcherType.js"
import * as NodeBody from "./NodeBody.js"

export type { MediaKind } from "./MediaFetcherType.js"

/** @since 1.0.0 */
export interface FetchedMedia {
  /**
   * Without parameters: the one the first bytes tell for an image, a video or a voice note; for a
   * document, the response's type, or the sniffed one when it gave none.
   */
  readonly mimeType: string
  /** From Content-Disposition, else the final URL's last path segment; `null` when neither has one. */
  readonly filename: string | null
  /** The length the server announced; `null` when it gave none. */
  readonly announcedSize: number | null
  /**
   * The file's bytes as they arrive, once, within the size cap and the time limit, on a Node stream
   * (a store reads it straight into its own). Read it before the scope `fetch` ran in closes: the
   * connection and the download slot are held until then.
   */
  readonly body: NodeBody.NodeBody<MediaTooLarge | MediaFetchFailed>
}

/** @since 1.0.0 */
export type FetchError = InvalidMedia | MediaTooLarge | MediaFetchFailed | Busy

/** @since 1.0.0 */
export interface Options {
  /** Let URLs reach loopback, private and other non-public addresses (tests, closed networks). Default false. */
  readonly allowPrivateAddresses?: boolean | undefined
  /** Host names exempt from the address check, such as an internal media server. Default none. */
  readonly allowHosts?: ReadonlyArray<string> | undefined
  /** Caps in bytes per kind; unset kinds keep {@link defaultMaxBytes}. */
  readonly maxBytes?: Partial<Record<MediaKind, number>> | undefined
  /** For the whole download, redirects included. Default 30 seconds. */
  readonly timeout?: Duration.DurationInput | undefined
  /** Downloads at once in this process; one more fails with `Busy`. Default 8. */
  readonly maxConcurrent?: number | undefined
  /** Redirects followed before giving up. Default 3. */
  readonly maxRedirects?: number | undefined
  /** Host name to IP addresses; the system resolver by default. Tests replace it. */
  readonly resolve?: ((hostname: string) => Effect.Effect<ReadonlyArray<string>, unknown>) | undefined
}

const MB = 1024 * 1024

/** @since 1.0.0 */
export const defaultMaxBytes: { readonly [K in MediaKind]: number } = {
  image: 5 * MB,
  voice: 16 * MB,
  video: 16 * MB,
  document: 100 * MB
}

/** @since 1.0.0 */
export const maxUrlLength = 2048

/** Seconds a client is told to wait when every download slot is taken. */
const BUSY_RETRY_AFTER = 5

/** Bytes read before the file is handed out: enough for every type `MediaFetcherType.sniff` knows. */
const HEAD_BYTES = 512

/**
 * Fetches attachment URLs. `fetch` is a span named `MediaFetcher.fetch`; it answers once the
 * headers and the first bytes are in (the type is checked on them), and the rest of the file
 * streams while the caller reads it. Closing the scope closes the connection.
 *
 * @since 1.0.0
 * @category context
 */
export class MediaFetcher extends Context.Tag("@wagate/media/MediaFetcher")<MediaFetcher, {
  readonly fetch: (url: string, kind: MediaKind) => Effect.Effect<FetchedMedia, FetchError, Scope.Scope>
}>() {
  /** @since 1.0.0 */
  static readonly layer = (options: Options = {}): Layer.Layer<MediaFetcher> =>
    Layer.effect(MediaFetcher, make(options))

  /**
   * Settings from `MEDIA_ALLOW_PRIVATE_URLS`, `MEDIA_MAX_BYTES`, `MEDIA_FETCH_TIMEOUT_MS` and
   * `MEDIA_MAX_CONCURRENT` (see {@link config}).
   *
   * @since 1.0.0
   */
  static readonly layerConfig: Layer.Layer<MediaFetcher, ConfigError.ConfigError> = Layer.effect(
    MediaFetcher,
    // Suspended: `config` and `make` are defined below the class.
    Effect.suspend(() => Effect.flatMap(config, make))
  )
}

const positive = (name: string) =>
  Config.integer(name).pipe(Config.validate({ message: `${name} must be a positive integer`, validation: (n) => n > 0 }))

/**
 * The fetcher's settings from configuration.
 *
 * @since 1.0.0
 */
export const config: Config.Config<Options> = Config.all({
  allowPrivateAddresses: Config.boolean("MEDIA_ALLOW_PRIVATE_URLS").pipe(
    Config.withDefault(false),
    Config.withDescription("Let attachment URLs reach loopback and private addresses (never on a public gateway)")
  ),
  maxBytes: positive("MEDIA_MAX_BYTES").pipe(
    Config.withDescription("One size cap in bytes for every attachment kind; unset: 5 MB images, 16 MB voice and video, 100 MB documents"),
    Config.option
  ),
  timeoutMs: Config.integer("MEDIA_FETCH_TIMEOUT_MS").pipe(
    // The longest a timer waits.
    Config.validate({
      message: "MEDIA_FETCH_TIMEOUT_MS must be from 1 to 2147483647 milliseconds",
      validation: (n) => n >= 1 && n <= 2 ** 31 - 1
    }),
    Config.withDefault(30_000),
    Config.withDescription("Time limit in milliseconds for downloading one attachment, redirects included")
  ),
  maxConcurrent: positive("MEDIA_MAX_CONCURRENT").pipe(
    Config.withDefault(8),
    Config.withDescription("Attachment downloads at once in this process; more are answered 503 busy")
  )
}).pipe(Config.map(({ maxBytes, timeoutMs, ...rest }) => ({
  ...rest,
  timeout: Duration.millis(timeoutMs),
  maxBytes: Option.match(maxBytes, {
    onNone: () => undefined,
    onSome: (n) => ({ image: n, voice: n, video: n, document: n })
  })
})))

/**
 * The fetcher for `options`.
 *
 * @since 1.0.0
 */
export const make = (options: Options): Effect.Effect<Context.Tag.Service<MediaFetcher>> =>
  Effect.gen(function*() {
    const maxConcurrent = options.maxConcurrent ?? 8
    let downloading = 0
    /** One of the download slots for the scope, or `Busy` at once when none is free. */
    const slot = Effect.acquireRelease(
      Effect.suspend(() => {
        if (downloading >= maxConcurrent) return Effect.fail(new Busy({ retryAfter: BUSY_RETRY_AFTER }))
        downloading++
        return Effect.void
      }),
      () => Effect.sync(() => void downloading--)
    )
    const timeout = Duration.decode(options.timeout ?? "30 seconds")
    const maxRedirects = options.maxRedirects ?? 3
    const resolve = options.resolve ?? GuardedHttp.systemResolve
    const allowHosts = new Set((options.allowHosts ?? []).map((host) => host.toLowerCase()))
    const guarded = (hostname: string) => options.allowPrivateAddresses !== true && !allowHosts.has(hostname)

    const target = (url: URL) =>
      GuardedHttp.addressFor(url, { guard: guarded(GuardedHttp.hostOf(url)), resolve }).pipe(
        Effect.mapError((e): InvalidMedia | MediaFetchFailed =>
          e.reason === "private" ? refused() : new MediaFetchFailed({ error: `Could not resolve ${e.host}` }))
      )

    const download = Effect.fn("MediaFetcher.download")(function*(start: URL, kind: MediaKind, signal: AbortSignal) {
      const cap = options.maxBytes?.[kind] ?? defaultMaxBytes[kind]
      let url = start
      for (let redirects = 0;; redirects++) {
        const answer = yield* MediaFetcherRequest.exchange(yield* target(url), cap, describeBytes(cap), signal)
        if (answer._tag === "Body") return { ...answer, url }
        if (redirects === maxRedirects) {
          return yield* new MediaFetchFailed({ error: `The URL redirected more than ${maxRedirects} times` })
        }
        url = yield* parseUrl(answer.location, url)
      }
    })

    const fetch = Effect.fn("MediaFetcher.fetch")(function*(rawUrl: string, kind: MediaKind) {
      yield* Effect.annotateCurrentSpan("media.kind", kind)
      const url = yield* parseUrl(rawUrl)
      yield* slot
      const tookTooLong = () =>
        new MediaFetchFailed({ error: `The download took longer than ${Duration.format(timeout)}` })
      // The time limit holds for the whole download: the headers, the first bytes, and the rest.
      // At the deadline the connection is closed (what is being read then fails, and reads as
      // "took longer"); the steps before the body also race it, since a name being resolved has
      // no connection to close yet. The body is not raced chunk by chunk: a race per chunk forks
      // fibers whose bookkeeping outlives a young-generation collection, and the chunks it holds
      // then wait for a full one (docs/storage.md, "Memory while files move").
      const late = new AbortController()
      const deadline = Effect.zipRight(Effect.sleep(timeout), Effect.suspend(() => {
        late.abort()
        return Effect.fail(tookTooLong())
      }))
      const started = yield* Effect.forkScoped(Effect.either(deadline))
      const lateOr = <E>(error: E): E | MediaFetchFailed => late.signal.aborted ? tookTooLong() : error
      const timed = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
        Effect.raceFirst(Effect.mapError(effect, lateOr), Effect.flatten(Fiber.join(started)))
      const fetched = yield* timed(download(url, kind, late.signal))
      // The first bytes, for the type; the body is then read from its start again.
      const { first, body } = yield* timed(NodeBody.head(fetched.body, HEAD_BYTES))
      if (first.byteLength === 0) return yield* new InvalidMedia({ error: "The file at the URL is empty" })
      const type = MediaFetcherType.check(kind, fetched.headers["content-type"], first)
      if ("mismatch" in type) return yield* new InvalidMedia({ error: type.mismatch })
      const announced = Number(fetched.headers["content-length"])
      return {
        mimeType: type.mimeType,
        filename: filename(fetched.headers["content-disposition"], fetched.url),
        announcedSize: Number.isSafeInteger(announced) && announced >= 0 ? announced : null,
        body: NodeBody.mapError(body, lateOr)
      } satisfies FetchedMedia
    })

    return { fetch }
  })

const refused = () => new InvalidMedia({ error: "URL points to a private or local address" })

/** An absolute http(s) URL without credentials, resolved against `base` for redirects. */
const parseUrl = (text: string, base?: URL): Effect.Effect<URL, InvalidMedia> => {
  const invalid = (why: string) => Effect.fail(new InvalidMedia({ error: why }))
  if (text.length > maxUrlLength) return invalid(`URL is longer than ${maxUrlLength} characters`)
  let url: URL
  try {
    url = new URL(text, base)
  } catch {
    return invalid("URL must be an absolute http or https URL")
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return invalid(`URL must be http or https, not ${url.protocol.slice(0, -1)}`)
  }
  if (url.username !== "" || url.password !== "") return invalid("URL must not contain a user name or password")
  if (url.href.length > maxUrlLength) return invalid(`URL is longer than ${maxUrlLength} characters`)
  return Effect.succeed(url)
}

const describeBytes = (bytes: number): string =>
  bytes % MB === 0 ? `${bytes / MB} MB` : `${bytes.toLocaleString("en-US")} bytes`
