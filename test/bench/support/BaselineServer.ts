/**
 * The baseline of the GET /messages benchmark, run as its own process: plain `node:http` and
 * `pg`, no framework, answering GET /api/v1/messages with the gateway's SQL and JSON shape. Per
 * request it checks the Bearer key with one indexed lookup of its SHA-256 in `api_keys` (the
 * gateway's query; it does not cache), resolves `from` with the gateway's number query, and runs
 * the gateway's keyset query.
 *
 * Environment: DATABASE_URL, PORT, MESSAGE_RETENTION_DAYS (default 365).
 */
import { createHash } from "node:crypto"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import { createRequire } from "node:module"

/** The part of `pg` used here (the package ships no types and @types/pg is not installed). */
interface PgPool {
  query(text: string, values?: ReadonlyArray<unknown>): Promise<{ rows: Array<Record<string, any>> }>
  end(): Promise<void>
}
const pg = createRequire(import.meta.url)("pg") as {
  Pool: new(options: { connectionString: string; max: number; application_name: string }) => PgPool
}

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL!, max: 10, application_name: "baseline" })
const retentionDays = Number(process.env.MESSAGE_RETENTION_DAYS ?? 365)

// The gateway's column list and key query (packages/store/src/Messages.ts, ApiKeys.ts).
const COLUMNS = "id, number_id, direction, source, chat_id, peer, peer_lid, name, is_group, group_subject, author, " +
  "wa_message_id, type, text, status, error, created_at, updated_at, media, media_skipped, media_skip_reason, media_pending"
const KEY_QUERY = `
        SELECT k.id, k.account_id, k.number_id
        FROM api_keys k
        LEFT JOIN numbers n ON n.id = k.number_id
        WHERE k.hash = $1 AND k.revoked_at IS NULL
          AND (k.number_id IS NULL OR n.deleted_at IS NULL)`

const toMessage = (r: Record<string, any>) => ({
  id: Number(r.id),
  from: Number(r.number_id),
  direction: r.direction,
  source: r.source,
  chat_id: r.chat_id,
  peer: r.peer,
  peer_lid: r.peer_lid,
  name: r.name,
  is_group: r.is_group,
  group_subject: r.group_subject,
  author: r.author,
  wa_message_id: r.wa_message_id,
  type: r.type,
  text: r.text,
  status: r.status,
  error: r.error,
  created_at: (r.created_at as Date).toISOString(),
  updated_at: (r.updated_at as Date).toISOString(),
  media: r.media,
  media_skipped: r.media_skipped,
  media_skip_reason: r.media_skip_reason,
  media_pending: r.media_pending
})

const send = (res: ServerResponse, status: number, body: unknown) => {
  const json = JSON.stringify(body)
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(json) })
  res.end(json)
}

const keyOf = (req: IncomingMessage): string | undefined => {
  const authorization = req.headers.authorization
  if (authorization !== undefined && /^bearer\s/i.test(authorization)) return authorization.slice(7).trim()
  const apiKey = req.headers["x-api-key"]
  return typeof apiKey === "string" ? apiKey.trim() : undefined
}

const chatIdOf = (raw: string) => (raw.includes("@") ? raw : `${raw.replace(/\D/g, "")}@c.us`)

const list = async (req: IncomingMessage, res: ServerResponse, params: URLSearchParams) => {
  const key = keyOf(req)
  if (!key) return send(res, 401, { error: "Missing API key", code: "unauthorized" })
  const { rows: [principal] } = await pool.query(KEY_QUERY, [createHash("sha256").update(key).digest()])
  if (!principal) return send(res, 401, { error: "Invalid API key", code: "invalid_key" })
  const accountId = Number(principal.account_id)

  let numberId: number | null = principal.number_id === null ? null : Number(principal.number_id)
  const from = params.get("from") ?? (numberId === null ? null : String(numberId))
  if (from !== null) {
    const byId = /^[1-9]\d{0,5}$/.test(from)
    const { rows: [number] } = await pool.query(
      `SELECT * FROM numbers WHERE account_id = $1 AND deleted_at IS NULL AND ${byId ? "id" : "phone"} = $2` +
        (numberId === null ? "" : " AND id = $3"),
      numberId === null ? [accountId, byId ? Number(from) : from] : [accountId, byId ? Number(from) : from, numberId]
    )
    if (!number) return send(res, 404, { error: "Number not found", code: "number_not_found" })
    numberId = Number(number.id)
  }

  const limit = Number(params.get("limit") ?? 50)
  const values: Array<unknown> = [accountId]
  const where = ["account_id = $1"]
  const add = (condition: string, value: unknown) => {
    values.push(value)
    where.push(`${condition} $${values.length}`)
  }
  if (numberId !== null) add("number_id =", numberId)
  const chat = params.get("chat")
  if (chat !== null) add("chat_id =", chatIdOf(chat))
  const direction = params.get("direction")
  if (direction !== null) add("direction =", direction)
  const since = params.get("since")
  if (since !== null) add("created_at >=", new Date(since))
  const until = params.get("until")
  if (until !== null) add("created_at <", new Date(until))
  const before = params.get("before")
  if (before !== null) add("id <", Number(before))
  if (retentionDays > 0) add("created_at >=", new Date(Date.now() - retentionDays * 86_400_000))
  values.push(limit + 1)
  const { rows } = await pool.query(
    `SELECT ${COLUMNS} FROM messages WHERE (${where.join(" AND ")}) ORDER BY id DESC LIMIT $${values.length}`,
    values
  )
  const messages = rows.slice(0, limit).map(toMessage)
  send(res, 200, { messages, next_before: rows.length > limit ? messages[messages.length - 1].id : null })
}

const server = createServer((req, res) => {
  const url = new URL(req.url ?? "/", "http://localhost")
  if (req.method === "GET" && url.pathname === "/api/v1/messages") {
    list(req, res, url.searchParams).catch((error) => send(res, 500, { error: String(error), code: "internal_error" }))
  } else if (url.pathname === "/api/status") {
    send(res, 200, { status: "ok" })
  } else {
    send(res, 404, { error: "Not found", code: "not_found" })
  }
})
server.keepAliveTimeout = 65_000
server.listen(Number(process.env.PORT), "127.0.0.1")

process.on("SIGTERM", () => {
  server.close()
  server.closeAllConnections()
  pool.end().finally(() => process.exit(0))
})
