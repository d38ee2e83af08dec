/**
 * The optional Redis connection (`REDIS_URL`). Commands fail fast while it is down instead of
 * queueing, so a lost Redis degrades shared limits instead of stalling requests.
 *
 * A Redis that stops answering with its connection left open (a network partition, a stalled
 * server) is the same outage: a command waits at most `COMMAND_TIMEOUT_MS`, and each connection
 * pings every `HEARTBEAT_MS`; a ping that times out (on time) drops the connection, so the
 * commands that follow fail at once while it reconnects (each reconnection's ready check times
 * out the same way until Redis answers again). The subscriber of key revocations is a connection
 * like any other, so it stops counting as listening (`KeyRevocations.reliable`) within seconds.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import { Redis as IORedis } from "ioredis"

export class Redis extends Context.Tag("@wagate/gateway/Redis")<Redis, {
  /** Prefix for every key and channel of this gateway. */
  readonly prefix: string
  readonly client: IORedis
  /**
   * Why `client` is not connected, while it is not: its last connection error (`connect
   * ECONNREFUSED 10.0.0.5:6379`, a name that does not resolve, a refused password), never the
   * URL's password. A command that fails then says only that the connection cannot take it.
   */
  readonly unreachable: () => Option.Option<string>
  /** Opens another connection to the same server (subscribers need their own). */
  readonly duplicate: Effect.Effect<IORedis, never, Scope.Scope>
}>() {}

/**
 * The longest wait for one command's answer. Redis answers in well under a millisecond; the
 * margin is for this process, whose timers fire late when its event loop is held up (a command
 * that times out is counted in memory instead).
 */
export const COMMAND_TIMEOUT_MS = 2000
/** How often each connection checks that Redis answers. */
export const HEARTBEAT_MS = 1000

/** Opens a connection; `lastError` is the last reason it lost or could not make its connection. */
const connect = (url: string) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const client = new IORedis(url, {
        maxRetriesPerRequest: 1,
        enableOfflineQueue: false,
        connectTimeout: 2000,
        commandTimeout: COMMAND_TIMEOUT_MS,
        retryStrategy: (times) => Math.min(times * 200, 2000),
        // ioredis would subscribe again after a reconnection with a command nobody waits for, whose
        // failure (Redis stalling, the connection dropping again) is an unhandled rejection, which
        // stops the process. A subscriber subscribes again itself (KeyRevocations).
        autoResubscribe: false
      })
      // Without a listener ioredis prints every failed reconnect; the commands that fail while
      // Redis is down are reported by their callers, once per outage.
      let lastError: Error | undefined
      client.on("error", (error: Error) => void (lastError = error))
      client.on("ready", () => void (lastError = undefined))
      const heartbeat = setInterval(() => {
        if (client.status !== "ready") return
        const sent = Date.now()
        client.ping().catch((error: unknown) => {
          // A time-out that fired well after it was due says this process was held up, not Redis.
          const onTime = Date.now() - sent < COMMAND_TIMEOUT_MS + 500
          if (onTime && client.status === "ready" && error instanceof Error && error.message === "Command timed out") {
            client.disconnect(true)
          }
        })
      }, HEARTBEAT_MS)
      heartbeat.unref()
      return { client, heartbeat, lastError: () => lastError }
    }),
    ({ client, heartbeat }) =>
      Effect.promise(() => {
        clearInterval(heartbeat)
        return client.quit().catch(() => client.disconnect())
      })
  )

const open = (url: string) => Effect.map(connect(url), ({ client }) => client)

/** `message` without the password of `url`, should a library ever repeat it. */
const withoutPassword = (message: string, url: string) => {
  const password = URL.canParse(url) ? decodeURIComponent(new URL(url).password) : ""
  return password === "" ? message : message.replaceAll(password, "***")
}

/** The connection to REDIS_URL; without it the gateway keeps shared state in memory. */
export const layer = (url: Redacted.Redacted, prefix: string) =>
  Layer.scoped(Redis, Effect.gen(function*() {
    const raw = Redacted.value(url)
    const { client, lastError } = yield* connect(raw)
    // Wait briefly for the first connection so start-up reports a wrong URL early.
    yield* Effect.promise(() =>
      new Promise<void>((resolve) => {
        if (client.status === "ready") return resolve()
        const done = () => resolve()
        client.once("ready", done)
        setTimeout(done, 2000).unref()
      })
    )
    const unreachable = () =>
      client.status === "ready"
        ? Option.none()
        : Option.some(withoutPassword(lastError()?.message ?? `no connection yet (${client.status})`, raw))
    return { prefix, client, unreachable, duplicate: open(raw) }
  }))
