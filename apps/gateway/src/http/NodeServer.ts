/**
 * The Node HTTP server under the gateway. Two things Node would otherwise do on its own:
 * - answer in plain text when it refuses a request before the gateway sees it (a malformed
 *   request, headers over 16 KiB, a request not received in time): here those answers are JSON
 *   `{error, code}` like every other;
 * - wait 300 s for a slow request body: here a request must arrive whole within
 *   `HTTP_REQUEST_TIMEOUT_MS` and its headers within `HTTP_HEADERS_TIMEOUT_MS`.
 * It also holds requests that arrive before the API's routes are built (see {@link make}), and
 * bounds how long a graceful stop waits for the requests in progress (see {@link drain}).
 */
import { type ApiError, BadRequest, HeadersTooLarge, RequestTimeout } from "@wagate/domain/ApiError"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import { createServer, type IncomingMessage, type Server, type ServerResponse, STATUS_CODES } from "node:http"
import * as Net from "node:net"
import type { Duplex } from "node:stream"

export interface Options {
  /** Longest time to receive a whole request, headers and body. */
  readonly requestTimeoutMs: number
  /** Longest time to receive the request line and headers. */
  readonly headersTimeoutMs: number
  /** Longest time a stop waits for the requests in progress. */
  readonly drainTimeoutMs: number
}

const refusal = (error: NodeJS.ErrnoException): ApiError => {
  switch (error.code) {
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return new RequestTimeout()
    case "HPE_HEADER_OVERFLOW":
      return new HeadersTooLarge()
    default:
      return new BadRequest()
  }
}

/** Answers a request Node's parser refused, as JSON, and closes the connection. */
const onClientError = (error: NodeJS.ErrnoException, socket: Duplex) => {
  const response = (socket as Duplex & { readonly _httpMessage?: ServerResponse })._httpMessage
  if (error.code === "ECONNRESET" || !socket.writable || response?.headersSent) {
    socket.destroy()
    return
  }
  const refused = refusal(error)
  const body = JSON.stringify({ error: refused.error, code: refused.code })
  socket.end(
    `HTTP/1.1 ${refused.status} ${STATUS_CODES[refused.status]}\r\n` +
      "content-type: application/json\r\n" +
      `content-length: ${Buffer.byteLength(body)}\r\n` +
      "connection: close\r\n\r\n" + body
  )
}

/**
 * How long an idle keep-alive connection stays open (Node's default: 5 s). Clients close theirs a
 * little before the server's announced timeout, so with 5 s a client sending every few seconds
 * opened a new connection for most requests; a busy Node process accepts one connection per turn
 * of its event loop, and new connections then waited seconds to be accepted. Longer than the
 * 60 s idle timeout of common load balancers, so they never send on a connection the gateway is
 * closing.
 */
export const KEEP_ALIVE_TIMEOUT_MS = 65_000

/**
 * A server factory for `NodeHttpServer.layer`. The server listens before the API's routes are
 * built; a request arriving in between would get no answer at all (a load balancer's first
 * health check, a CLI started at once). So it holds such requests and hands them to the
 * gateway's handler as soon as that is attached.
 */
export const make = (options: Options) => (): Server => {
  const server = createServer({
    requestTimeout: options.requestTimeoutMs,
    headersTimeout: Math.min(options.headersTimeoutMs, options.requestTimeoutMs),
    // Node looks for requests past their time this often (30 s by default).
    connectionsCheckingInterval: Math.min(1000, options.requestTimeoutMs),
    keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS
  })
  server.on("clientError", onClientError)
  drain(server, options.drainTimeoutMs)
  const held: Array<readonly [IncomingMessage, ServerResponse]> = []
  const hold = (request: IncomingMessage, response: ServerResponse) => void held.push([request, response])
  server.on("request", hold)
  server.on("newListener", (event, listener) => {
    if (event !== "request" || listener === hold) return
    server.off("request", hold)
    // Emitted before the listener is added: hand the held requests over once it is.
    queueMicrotask(() => held.splice(0).forEach(([request, response]) => listener(request, response)))
  })
  return server
}

/**
 * Node's `close` stops accepting connections, closes the idle ones and waits for every request in
 * progress to end, however long: a client downloading a large file slowly, or one that stopped
 * reading without closing its connection, held the whole graceful stop (its shards' hand-over,
 * the pools' close) until SHUTDOWN_TIMEOUT_MS ended the process with status 1. Here the requests
 * still in progress `drainTimeoutMs` after the stop began have their connections closed; their
 * clients see a cut connection, as they would at the process's end, and retry elsewhere.
 */
const drain = (server: Server, drainTimeoutMs: number) => {
  const close = server.close.bind(server)
  server.close = (callback) => {
    const timer = setTimeout(() => server.closeAllConnections(), drainTimeoutMs).unref()
    return close((error) => {
      clearTimeout(timer)
      callback?.(error)
    })
  }
}

/** The HTTP address cannot be listened on (the port is taken, the host is not this machine's...). */
export class CannotListen extends Data.TaggedError("CannotListen")<{
  readonly host: string
  readonly port: number
  readonly error: NodeJS.ErrnoException
}> {
  override get message() {
    return this.error.code === "EADDRINUSE"
      ? `HTTP port ${this.port} on ${this.host} is in use by another process: stop it or set HTTP_PORT to a free port`
      : `cannot listen on ${this.host}:${this.port} (HTTP_HOST, HTTP_PORT): ${this.error.message}`
  }
}

/**
 * Fails at once when the gateway could not listen on `host:port`. Its server listens only once the
 * database and the cluster are up, which takes seconds; a taken port would be found only then.
 * (A process taking the port in between is still found then, by the server's own listen.)
 */
export const checkListen = (host: string, port: number) =>
  Effect.async<void, CannotListen>((resume) => {
    const probe = Net.createServer()
    probe.once("error", (error) => resume(Effect.fail(new CannotListen({ host, port, error }))))
    probe.listen({ host, port }, () => probe.close(() => resume(Effect.void)))
  })
