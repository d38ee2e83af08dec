/**
 * A put body as a stream that counts its bytes and enforces the announced length, shared by the
 * stores so they agree on sizes and on what a wrong length does.
 *
 * @since 1.0.0
 */
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import type { Readable } from "node:stream"
import type { BlobBody } from "./BlobPort.js"
import { BlobStoreError, BodyLengthMismatch } from "./BlobStoreError.js"
import * as NodeBody from "./NodeBody.js"
import * as TransferMemory from "./TransferMemory.js"

/** @since 1.0.0 */
export interface MeasuredBody<E> {
  readonly stream: Stream.Stream<Uint8Array, E | BlobStoreError>
  /** Bytes that went through `stream` so far. */
  readonly size: Effect.Effect<number>
}

/** The count of a body's bytes and the length rule, a chunk at a time and at its end. */
const counter = (expected: number | undefined) => {
  let size = 0
  const wrongLength = (actual: string) =>
    new BlobStoreError({ op: "put", cause: new BodyLengthMismatch(actual, expected ?? 0) })
  return {
    size: () => size,
    chunk: (bytes: number) => {
      size += bytes
      TransferMemory.moved(bytes)
      return expected !== undefined && size > expected ? wrongLength(`more than ${expected}`) : undefined
    },
    end: () => expected !== undefined && size !== expected ? wrongLength(`${size}`) : undefined
  }
}

/**
 * Fails the stream as soon as it passes `expected` bytes, or at its end when it fell short, so a
 * store that commits only after the stream ends never commits a wrong length.
 *
 * @since 1.0.0
 */
export const make = <E>(body: BlobBody<E>, expected: number | undefined): Effect.Effect<MeasuredBody<E>> =>
  Effect.sync(() => {
    const count = counter(expected)
    const source: Stream.Stream<Uint8Array, E> = body instanceof Uint8Array
      ? Stream.succeed(body)
      : NodeBody.isNodeBody(body)
      ? NodeBody.toStream(body)
      : body
    const stream = source.pipe(
      Stream.tap((chunk) => {
        const error = count.chunk(chunk.byteLength)
        return error === undefined ? Effect.void : Effect.fail(error)
      }),
      Stream.concat(Stream.suspend(() => {
        const error = count.end()
        return error === undefined ? Stream.empty : Stream.fail(error)
      }))
    )
    return { stream, size: Effect.sync(count.size) }
  })

/**
 * `make` for a Node body that a store hands on as a Node stream: the same count and length rules,
 * checked as the chunks pass, with no Effect for each. `failed` is told the body's failure (its
 * own error, or a wrong length) as soon as there is one, even one that came before (the pipe
 * passes on the error of a source that has failed already).
 *
 * @since 1.0.0
 */
export const node = <E>(
  body: NodeBody.NodeBody<E>,
  expected: number | undefined,
  failed: (error: E | BlobStoreError) => void
): { readonly readable: Readable; readonly size: Effect.Effect<number> } => {
  const count = counter(expected)
  const measured = NodeBody.checked(body, { chunk: (chunk) => count.chunk(chunk.byteLength), end: count.end })
  measured.readable.once("error", (error) => failed(measured.failure(error)))
  return { readable: measured.readable, size: Effect.sync(count.size) }
}
