/**
 * Bytes that arrive on a Node stream and leave on another: a download on its way into the store.
 * A store reads such a body with Node's own piping, without an Effect for every chunk, so each
 * chunk can be collected as soon as it is written on. Run through an Effect stream, a 50 MB file's
 * chunks outlived young collections and the process grew by about 20 MiB more
 * (docs/performance.md, media, "The chunks outlive young collections").
 *
 * @since 1.0.0
 */
import * as NodeStream from "@effect/platform-node/NodeStream"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { pipeline, Readable, Transform } from "node:stream"

/**
 * A body to be read once from `readable`; `failure` turns what the stream fails with into the
 * body's own error.
 *
 * @since 1.0.0
 */
export interface NodeBody<E> {
  readonly _tag: "NodeBody"
  readonly readable: Readable
  readonly failure: (cause: unknown) => E
}

/** @since 1.0.0 */
export const make = <E>(readable: Readable, failure: (cause: unknown) => E): NodeBody<E> => ({
  _tag: "NodeBody",
  readable,
  failure
})

/** @since 1.0.0 */
export const isNodeBody = <T>(u: T): u is Extract<T, { readonly _tag: "NodeBody" }> =>
  typeof u === "object" && u !== null && (u as { readonly _tag?: unknown })._tag === "NodeBody"

/** The same body with its failures turned into other errors. @since 1.0.0 */
export const mapError = <E, E2>(body: NodeBody<E>, f: (error: E) => E2): NodeBody<E2> =>
  make(body.readable, (cause) => f(body.failure(cause)))

/** The same bytes as an Effect stream, for a consumer that is not a Node stream. @since 1.0.0 */
export const toStream = <E>(body: NodeBody<E>): Stream.Stream<Uint8Array, E> =>
  Stream.suspend(() =>
    // A stream that failed before anyone read it has no error left to emit.
    body.readable.errored
      ? Stream.fail(body.failure(body.readable.errored))
      : NodeStream.fromReadable<E, Uint8Array>(() => body.readable, body.failure)
  )

/**
 * `body` passed through `check`, which sees every chunk as it goes and may fail the body with an
 * error of its own, or at its end. Errors of the source reach the result too, and one that comes
 * when nothing reads the result (an answer the caller did not want) goes nowhere; destroying the
 * result destroys the source.
 *
 * @since 1.0.0
 */
export const checked = <E, E2>(
  body: NodeBody<E>,
  check: {
    readonly chunk?: (chunk: Buffer) => E2 | undefined
    readonly end?: () => E2 | undefined
  }
): NodeBody<E | E2> => {
  const own = new WeakSet<object>()
  const refuse = (error: E2 | undefined) => {
    if (typeof error === "object" && error !== null) own.add(error)
    return error
  }
  const through = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      const error = refuse(check.chunk?.(chunk))
      if (error !== undefined) done(error as Error)
      else done(null, chunk)
    },
    flush(done) {
      const error = refuse(check.end?.())
      done(error === undefined ? null : error as Error)
    }
  })
  through.on("error", () => {})
  // Both ways: an error of the source fails the result, and a result given up stops the source.
  pipeline(body.readable, through, () => {})
  return make(through, (cause) => own.has(cause as object) ? cause as E2 : body.failure(cause))
}

/**
 * The body's first `bytes` bytes (fewer when it is shorter), and the body, still whole, to read
 * from its start.
 *
 * @since 1.0.0
 */
export const head = <E>(body: NodeBody<E>, bytes: number): Effect.Effect<{ readonly first: Buffer; readonly body: NodeBody<E> }, E> =>
  Effect.async((resume) => {
    const { readable } = body
    const chunks: Array<Buffer> = []
    let read = 0
    const detach = () => {
      readable.off("readable", onReadable)
      readable.off("end", onEnd)
      readable.off("error", onError)
    }
    const done = (ended: boolean) => {
      detach()
      const first = Buffer.concat(chunks)
      if (ended) return resume(Effect.succeed({ first, body: make(Readable.from(first.byteLength > 0 ? [first] : []), body.failure) }))
      readable.unshift(first)
      resume(Effect.succeed({ first, body }))
    }
    const onReadable = () => {
      let chunk: Buffer | null
      while (read < bytes && (chunk = readable.read() as Buffer | null) !== null) {
        chunks.push(chunk)
        read += chunk.byteLength
      }
      if (read >= bytes) done(false)
    }
    const onEnd = () => done(true)
    const onError = (error: unknown) => {
      detach()
      resume(Effect.fail(body.failure(error)))
    }
    if (readable.errored) return resume(Effect.fail(body.failure(readable.errored)))
    readable.on("readable", onReadable)
    readable.once("end", onEnd)
    readable.once("error", onError)
    return Effect.sync(detach)
  })
