/**
 * One webhook attempt: a POST of the signed body through the guarded client (`GuardedHttp`),
 * answered within the timeout, to the address checked for the URL. Each account's entity has a sender of its own, with its own kept-alive
 * connection, so a slow or dead receiver of one account holds no socket, slot or queue another
 * account needs.
 *
 * @since 1.0.0
 */
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as ExecutionStrategy from "effect/ExecutionStrategy"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Scope from "effect/Scope"
import * as GuardedHttp from "@wagate/media/GuardedHttp"
import * as http from "node:http"
import * as https from "node:https"
import { finished } from "node:stream"
import * as WebhookUrl from "./WebhookUrl.js"

/** What an attempt got: the HTTP status, or why there was none. @since 1.0.0 */
export interface Attempt {
  readonly status: number | null
  readonly error: string | null
  /** From sending the request to the answer's status line (or to the failure). */
  readonly latencyMs: number
}

/** @since 1.0.0 */
export interface Sender {
  readonly post: (url: string, headers: Record<string, string>, body: string) => Effect.Effect<Attempt>
}

/** @since 1.0.0 */
export interface Options {
  readonly timeout: Duration.DurationInput
  readonly allowPrivate: boolean
  readonly resolve?: WebhookUrl.Resolve | undefined
}

/** How long a host's checked address is reused before it is resolved and checked again. */
const ADDRESS_TTL_MS = 30_000

/**
 * How long the next request waits for an earlier answer's body to end before closing that
 * connection: the body means nothing, but while it arrives it holds the account's only socket.
 */
const DRAIN_LIMIT = Duration.seconds(1)

class Failed {
  constructor(readonly error: string, readonly staleSocket: boolean) {}
}

/**
 * A sender for the scope; its connections are closed with the scope.
 *
 * @since 1.0.0
 */
export const make = (options: Options): Effect.Effect<Sender, never, Scope.Scope> =>
  Effect.gen(function*() {
    const timeout = Duration.decode(options.timeout)
    const scope = yield* Effect.scope
    const agents = yield* Effect.acquireRelease(
      Effect.sync(() => ({
        http: new http.Agent({ keepAlive: true, maxSockets: 1 }),
        https: new https.Agent({ keepAlive: true, maxSockets: 1 })
      })),
      (a) => Effect.sync(() => {
        a.http.destroy()
        a.https.destroy()
      })
    )
    const targets = new Map<string, { readonly target: GuardedHttp.Target; readonly until: number }>()
    /** The last answer, whose body may still be arriving, with the scope that holds its request. */
    let draining: { readonly ended: Deferred.Deferred<void>; readonly scope: Scope.CloseableScope } | undefined

    /**
     * Lets the last answer's body end (at most `DRAIN_LIMIT`), then closes its request, which closes
     * the connection unless the answer was read whole. The next request then gets the socket, or a
     * new one, and its time limit is not spent waiting in the agent for a socket an answer holds.
     */
    const settleLast = Effect.suspend(() => {
      const last = draining
      draining = undefined
      if (last === undefined) return Effect.void
      // Closed in a fiber of its own. The request's finalizer was added by the fiber that made
      // the request (the one the timeout forks), and a finalizer runs with the fiber refs of the
      // fiber that added it: closed in the caller's fiber, it left that fiber's refs with two
      // more entries of history an attempt, each with a copy of the context, which an entity's
      // delivery loop kept for as long as it ran (MBs an hour for a busy account). The fiber's
      // refs end with it: it is awaited, not joined.
      const close = Effect.fork(Scope.close(last.scope, Exit.void)).pipe(Effect.flatMap(Fiber.await), Effect.asVoid)
      return Deferred.isDone(last.ended).pipe(
        Effect.flatMap((ended) =>
          ended ? close : Deferred.await(last.ended).pipe(Effect.timeout(DRAIN_LIMIT), Effect.ignore, Effect.ensuring(close))
        )
      )
    })

    const targetOf = (url: URL) =>
      Effect.suspend(() => {
        const key = `${url.protocol}//${url.host}`
        const known = targets.get(key)
        // The checked address is reused for a while; the path of this attempt's URL is its own.
        if (known && known.until > Date.now()) return Effect.succeed({ url, address: known.target.address })
        return WebhookUrl.target(url, { allowPrivate: options.allowPrivate, resolve: options.resolve }).pipe(
          Effect.tap((target) => Effect.sync(() => targets.set(key, { target, until: Date.now() + ADDRESS_TTL_MS })))
        )
      })

    /** One exchange through the guarded client; a redirect is an answer (not followed). */
    const exchange = (target: GuardedHttp.Target, headers: Record<string, string>, body: Uint8Array) =>
      Effect.uninterruptibleMask((restore) =>
        Effect.gen(function*() {
          const request = yield* Scope.fork(scope, ExecutionStrategy.sequential)
          const res = yield* restore(GuardedHttp.request(target, {
            method: "POST",
            headers,
            body,
            agent: target.url.protocol === "https:" ? agents.https : agents.http
          })).pipe(
            Scope.extend(request),
            Effect.onError((cause) => Scope.close(request, Exit.failCause(cause)))
          )
          // The body is read and dropped as it comes, so that the socket is free once it ends.
          const ended = yield* Deferred.make<void>()
          const readable = res.body.readable
          readable.on("error", () => undefined)
          finished(readable, () => Deferred.unsafeDone(ended, Exit.void))
          readable.resume()
          draining = { ended, scope: request }
          return res.status
        })
      ).pipe(
        Effect.mapError((e) => new Failed(GuardedHttp.describe(e, "deliver to"), e.staleSocket))
      )

    const post = (rawUrl: string, headers: Record<string, string>, body: string): Effect.Effect<Attempt> =>
      Effect.zipRight(settleLast, Effect.suspend(() => {
        const started = performance.now()
        const latencyMs = () => Math.round(performance.now() - started)
        const url = new URL(rawUrl)
        const payload = Buffer.from(body, "utf8")
        return targetOf(url).pipe(
          Effect.mapError((e) => new Failed(e.reason, false)),
          Effect.flatMap((target) =>
            exchange(target, headers, payload).pipe(
              // A kept-alive connection the receiver had just closed: once more on a new one.
              Effect.catchIf((e) => e.staleSocket, () => exchange(target, headers, payload))
            )
          ),
          Effect.timeoutFail({
            duration: timeout,
            onTimeout: () => new Failed(`No answer within ${Duration.format(timeout)}`, false)
          }),
          Effect.match({
            onSuccess: (status): Attempt => ({ status, error: null, latencyMs: latencyMs() }),
            onFailure: (e): Attempt => ({ status: null, error: e.error, latencyMs: latencyMs() })
          })
        )
      }))

    return { post }
  })
