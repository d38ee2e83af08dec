/**
 * What the chunks of a file transfer cost the process, and what bounds it.
 *
 * Every chunk a transfer reads from a socket or a file is a fresh buffer outside V8's heap, freed
 * only when a collection finds its wrapper dead. V8 starts a young collection on its own once
 * 32 MiB of such buffers have been allocated since the last one (twice its default largest
 * semi-space, whatever `--max-semi-space-size` says), so a fast transfer of a large file leaves
 * about that much dead memory behind at any moment, and the allocator keeps it as the process's
 * high-water mark (docs/performance.md, "Media files").
 *
 * So every `COLLECT_EVERY` bytes of files moved through a blob store (all transfers of the
 * process together), the gateway asks V8 for a young collection itself. It costs what V8's own
 * young collections cost, and frees the dead chunks while they are still few. It runs only when
 * node exposes its collector (`--expose-gc`, which `npm start` passes); without it V8 is left
 * to its own schedule.
 *
 * @since 1.0.0
 */
import * as NodeBody from "./NodeBody.js"

/**
 * 2 MiB of file bytes between collections: a few MiB of dead chunks at most, instead of 32 (4 and
 * 8 MiB left the first 50 MB file near or over 30 MB more often; docs/performance.md, media).
 *
 * @since 1.0.0
 */
export const COLLECT_EVERY = 2 * 1024 * 1024

let sinceCollection = 0

/**
 * Counts `bytes` of a file as moved, and starts a young collection when `COLLECT_EVERY` bytes
 * have moved since the last one.
 *
 * @since 1.0.0
 */
export const moved = (bytes: number): void => {
  sinceCollection += bytes
  if (sinceCollection < COLLECT_EVERY) return
  sinceCollection = 0
  // Looked up at each use: node defines it at start-up with `--expose-gc`, or not at all.
  globalThis.gc?.({ type: "minor" })
}

/**
 * `body` with its bytes counted as moved, as they pass.
 *
 * @since 1.0.0
 */
export const counted = <E>(body: NodeBody.NodeBody<E>): NodeBody.NodeBody<E> =>
  NodeBody.checked<E, never>(body, {
    chunk: (chunk) => {
      moved(chunk.byteLength)
      return undefined
    }
  })
