/**
 * The official MCP SDK client pointed at a test gateway's /api/mcp, and plain requests to it
 * for what the client hides (statuses, headers, bodies before any MCP exchange).
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import * as Effect from "effect/Effect"
import { request as httpRequest } from "node:http"
import type { RunningGateway } from "../support/TestGateway.js"

export interface ToolResult {
  readonly content: ReadonlyArray<{ readonly type: string; readonly text?: string }>
  readonly structuredContent?: any
  readonly isError?: boolean
}

export interface Connected {
  readonly client: Client
  readonly transport: StreamableHTTPClientTransport
  /** Calls a tool; a tool error is a result (isError), a protocol error fails. */
  readonly call: (name: string, args?: Record<string, unknown>) => Effect.Effect<ToolResult>
}

/** An initialized SDK client with the key, closed with the scope. */
export const connect = (gateway: RunningGateway, key: string) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const client = new Client({ name: "wagate-test", version: "1.0.0" })
      const transport = new StreamableHTTPClientTransport(new URL(`${gateway.url}/api/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${key}` } }
      })
      await client.connect(transport)
      return { client, transport }
    }),
    ({ client }) => Effect.promise(() => client.close())
  ).pipe(Effect.map(({ client, transport }): Connected => ({
    client,
    transport,
    call: (name, args = {}) => Effect.promise(() => client.callTool({ name, arguments: args }) as Promise<ToolResult>)
  })))

/** The JSON a refused call carries: `{error, code, retry_after_seconds?, retry_at?}`. */
export const refusal = (result: ToolResult) => {
  if (result.isError !== true) throw new Error(`expected a tool error, got ${JSON.stringify(result)}`)
  return JSON.parse(result.content[1].text!) as {
    error: string
    code: string
    retry_after_seconds?: number
    retry_at?: string
  }
}

export interface RawAnswer {
  readonly status: number
  readonly headers: Record<string, string | Array<string> | undefined>
  readonly body: any
}

const INITIALIZE = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "1" } }
}

/**
 * A raw request to /api/mcp (node:http, so Host can be set); an initialize by default. `bytes`
 * is sent as written (a body that is not JSON), `body` as JSON.
 */
export const raw = (
  gateway: RunningGateway,
  options: { method?: string; headers?: Record<string, string>; body?: unknown; bytes?: string | Buffer } = {}
) =>
  Effect.async<RawAnswer>((resume) => {
    const url = new URL(`${gateway.url}/api/mcp`)
    const method = options.method ?? "POST"
    const body = method !== "POST" ? undefined : options.bytes ?? JSON.stringify(options.body ?? INITIALIZE)
    const req = httpRequest({
      host: url.hostname,
      port: url.port,
      path: url.pathname,
      method,
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        ...options.headers
      }
    }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (c) => chunks.push(c))
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8")
        let parsed: unknown = text
        try {
          parsed = JSON.parse(text)
        } catch {
          // not JSON: kept as text
        }
        resume(Effect.succeed({ status: res.statusCode ?? 0, headers: res.headers, body: parsed }))
      })
    })
    req.on("error", (e) => resume(Effect.die(e)))
    req.end(body)
  })
