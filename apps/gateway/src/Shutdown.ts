/**
 * A bounded stop. SIGTERM or SIGINT start the graceful stop (HTTP closes, entities hand their
 * shards over, pools close); if that has not ended after `timeoutMs` (SHUTDOWN_TIMEOUT_MS,
 * 30 s by default), because an entity or a connection is stuck, the process exits anyway with
 * status 1. Exiting releases the runner port, the HTTP port and the database connections (the
 * shard locks are advisory locks of those connections), so a replacement on the same ports starts
 * cleanly.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Runtime from "effect/Runtime"

/**
 * Arms the hard exit on the first SIGTERM or SIGINT, and says the stop has begun; a second signal
 * exits at once, saying so.
 */
export const bound = (timeoutMs: number) =>
  Effect.gen(function*() {
    const runtime = yield* Effect.runtime<never>()
    let stopping = false
    const onSignal = (signal: NodeJS.Signals) => {
      if (stopping) {
        process.stderr.write(`wagate: ${signal} again while stopping; exiting now\n`)
        process.exit(1)
      }
      stopping = true
      Runtime.runFork(runtime)(
        Effect.logInfo(`stopping on ${signal}: finishing requests, handing shards over (at most ${timeoutMs} ms)`)
      )
      setTimeout(() => {
        process.stderr.write(`wagate: still stopping ${timeoutMs} ms after ${signal}; exiting\n`)
        process.exit(1)
      }, timeoutMs).unref()
    }
    process.on("SIGTERM", onSignal)
    process.on("SIGINT", onSignal)
  })

/** The bound as a layer of the composition root. */
export const layer = (timeoutMs: number) => Layer.effectDiscard(bound(timeoutMs))
