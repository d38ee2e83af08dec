/**
 * Free TCP ports for servers a test or benchmark starts on a port it must know in advance (a
 * runner's address, a child process's HTTP port).
 *
 * Asking the system for port 0 and closing the socket is racy: until the server binds, the same
 * port may be handed to any other socket on the machine, and outgoing connections (hundreds to
 * PostgreSQL and Redis while the suite runs) take their local ports from that same ephemeral range.
 * So ports come from below it (20000-31999), each process of the suite from a slice of its own
 * (vitest's pool id), handed out in turn, and each one checked free before it is returned.
 */
import * as Effect from "effect/Effect"
import { createServer } from "node:net"

const FIRST = 20_000
const SLICE = 1_000
const SLICES = 12

const poolId = Number(process.env.VITEST_POOL_ID ?? 0)
const base = FIRST + (Number.isInteger(poolId) ? poolId % SLICES : 0) * SLICE
let next = Math.floor(Math.random() * SLICE)

const isFree = (port: number) =>
  new Promise<boolean>((resolve) => {
    const server = createServer()
    server.once("error", () => resolve(false))
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)))
  })

/** A port on loopback nothing listens on, not handed out before by this process (until its slice wraps). */
export const freePortAsync = async (): Promise<number> => {
  for (let tries = 0; tries < SLICE; tries++) {
    const port = base + (next++ % SLICE)
    if (await isFree(port)) return port
  }
  throw new Error(`no free port in ${base}-${base + SLICE - 1}`)
}

export const freePort: Effect.Effect<number> = Effect.promise(freePortAsync)
