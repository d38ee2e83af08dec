/**
 * What the cluster tests do to a running cluster, over its HTTP surfaces only: provision numbers
 * through the operator API, send steadily through the public API (each send under its own
 * Idempotency-Key, retried with it until it has a definite answer), have peers write to the
 * numbers through the simulator's control API, and read back what the network received.
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import { deepStrictEqual } from "node:assert/strict"
import * as Effect from "effect/Effect"
import { OPERATOR_TOKEN } from "./ClusterProcesses.js"

const ops = { authorization: `Bearer ${OPERATOR_TOKEN}`, "content-type": "application/json" }

const call = async (url: string, init: RequestInit & { headers?: Record<string, string> } = {}) => {
  const response = await fetch(url, { ...init, signal: AbortSignal.timeout(30_000) })
  const text = await response.text()
  let body: any = null
  try {
    body = text === "" ? null : JSON.parse(text)
  } catch {
    body = text
  }
  return { status: response.status, body }
}

/**
 * A read the test observes the cluster with (GET): tried again, up to three times, when its
 * connection is closed under it (a keep-alive connection the server closed as the request went
 * out, which a loaded machine makes likelier); what it reads is the same either way.
 */
const observe = async (url: string, init: RequestInit & { headers?: Record<string, string> }) => {
  for (let attempt = 1;; attempt++) {
    try {
      return await call(url, init)
    } catch (error) {
      if ((init.method ?? "GET") !== "GET" || attempt === 3 || !(error instanceof TypeError)) throw error
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
  }
}

const must = async (url: string, init: RequestInit & { headers?: Record<string, string> } = {}) => {
  const { body, status } = await observe(url, init)
  if (status >= 300) throw new Error(`${init.method ?? "GET"} ${url}: ${status} ${JSON.stringify(body)}`)
  return body
}

export interface NumberRef {
  readonly id: number
  readonly phone: string
  /** The account key that sends from it. */
  readonly key: string
  /** The peer that writes to it first, and that it answers. */
  readonly peer: string
}

export interface SimNumber {
  readonly phone: string
  readonly linked: boolean
  readonly status: string
  readonly session_open: boolean
  /** Sessions it connected through since the simulator started; each reconnect counts. */
  readonly sessions: number
}

export const simNumbers = (simUrl: string): Promise<ReadonlyArray<SimNumber>> =>
  must(`${simUrl}/sim/v1/numbers`, { headers: ops })

/** Numbers of `phones` that the network sees connected (WORKING, session open). */
export const working = async (simUrl: string, phones: ReadonlySet<string>) =>
  (await simNumbers(simUrl)).filter((n) => phones.has(n.phone) && n.status === "WORKING" && n.session_open).length

/**
 * `accounts` accounts of `perAccount` numbers each. The accounts and their keys go through the
 * operator API; the numbers are written to the database as numbers linked before (as after a
 * restart of a gateway that linked them), which the runners connect when they start. Linking a
 * thousand numbers one by one through the API is what test/api covers, and takes minutes here.
 */
export const provision = async (
  apiUrl: string,
  seedNumbers: (accountId: number, phones: ReadonlyArray<string>) => Promise<void>,
  accounts: number,
  perAccount: number
): Promise<ReadonlyArray<NumberRef>> => {
  const numbers: Array<NumberRef> = []
  const run = Date.now().toString().slice(-5)
  for (let a = 0; a < accounts; a++) {
    const account = await must(`${apiUrl}/ops/v1/accounts`, {
      method: "POST",
      headers: ops,
      body: JSON.stringify({ email: `cluster-${run}-${a}@example.kz`, company: "Cluster LLP" })
    })
    await must(`${apiUrl}/ops/v1/accounts/${account.id}/credit`, {
      method: "POST",
      headers: ops,
      body: JSON.stringify({ amount: 10_000_000 })
    })
    const { key } = await must(`${apiUrl}/ops/v1/keys`, {
      method: "POST",
      headers: ops,
      body: JSON.stringify({ account_id: account.id })
    })
    const phones = Array.from({ length: perAccount }, (_, i) => `7701${run}${String(a * perAccount + i).padStart(5, "0")}`)
    await seedNumbers(account.id, phones)
    const listed = await must(`${apiUrl}/api/v1/numbers`, { headers: { authorization: `Bearer ${key}` } })
    for (const n of listed.numbers as ReadonlyArray<{ id: number; phone: string }>) {
      numbers.push({ id: n.id, phone: n.phone, key, peer: `7702${n.phone.slice(4)}` })
    }
  }
  return numbers
}

/**
 * `provision`, with the numbers written as linked ten days before (out of their warm-up), which
 * the runners connect as they start.
 */
export const provisionLinked = (
  ready: { readonly apiUrl: string; readonly sql: SqlClient.SqlClient },
  accounts: number,
  perAccount: number
) =>
  Effect.promise(() =>
    provision(ready.apiUrl, (accountId, phones) =>
      Effect.runPromise(Effect.orDie(Effect.asVoid(Effect.zipRight(
        ready.sql`UPDATE accounts SET numbers_limit = ${phones.length} WHERE id = ${accountId}`,
        ready.sql`
        INSERT INTO numbers (account_id, phone, status, linked, connected_at)
        SELECT ${accountId}, phone, 'STARTING', true, now() - interval '10 days'
        FROM unnest(${`{${phones.join(",")}}`}::text[]) AS phone`
      )))), accounts, perAccount)
  )

export interface SendOutcome {
  readonly text: string
  readonly from: string
  /** The final answer's status (200: accepted); 0 when none came. */
  readonly status: number
  readonly code: string | null
  /** When the send was first made, and how long it took to its final answer. */
  readonly startedAt: Date
  readonly tookMs: number
  /** Answers that were not the final one (retried): status, code and error ("503 capacity: ...", "0" for none). */
  readonly retried: ReadonlyArray<string>
}

/** One send, retried under its Idempotency-Key while the answer is 503 or nothing, up to `patienceMs`. */
export const send = async (apiUrl: string, n: NumberRef, text: string, patienceMs = 45_000): Promise<SendOutcome> => {
  const startedAt = Date.now()
  const deadline = startedAt + patienceMs
  const retried: Array<string> = []
  const key = `cluster-${text}`
  for (;;) {
    const { body, status } = await call(`${apiUrl}/api/v1/messages/send`, {
      method: "POST",
      headers: { authorization: `Bearer ${n.key}`, "content-type": "application/json", "idempotency-key": key },
      body: JSON.stringify({ to: n.peer, text, from: n.id })
    }).catch(() => ({ status: 0, body: null }))
    const retry = status === 0 || status === 503
    if (!retry || Date.now() > deadline) {
      return { text, from: n.phone, status, code: body?.code ?? null, retried, startedAt: new Date(startedAt), tookMs: Date.now() - startedAt }
    }
    retried.push(body?.code ? `${status} ${body.code}: ${body.error}` : String(status))
    await new Promise((resolve) => setTimeout(resolve, 500))
  }
}

/**
 * Sends as a client that keeps to a number's one message a second: a send to a number starts only
 * once that number's previous send has its final answer, and a second after it. An open loop that
 * only spaces a number's sends (each number in turn) does not: a send retried through a move
 * (503 `capacity`) can be accepted within the second before the next send to its number, which
 * the gateway then rightly refuses with `rate_limited`.
 */
export const pacedSender = (apiUrl: string) => {
  const free = new Map<string, Promise<void>>()
  return (n: NumberRef, text: string): Promise<SendOutcome> => {
    const sent = (free.get(n.phone) ?? Promise.resolve()).then(() => send(apiUrl, n, text))
    free.set(n.phone, sent.then(() => new Promise((resolve) => setTimeout(resolve, 1_000))))
    return sent
  }
}

/** A peer writes to a number; the id the network gave the message. */
export const inbound = async (simUrl: string, n: NumberRef, text: string): Promise<string> =>
  (await must(`${simUrl}/sim/v1/inbound`, {
    method: "POST",
    headers: ops,
    body: JSON.stringify({ to: n.phone, from: n.peer, text })
  })).wa_message_id

export interface Sent {
  readonly from: string
  readonly to: string
  readonly text: string | null
  readonly sent_at: string
}

export const sentLog = (simUrl: string): Promise<ReadonlyArray<Sent>> => must(`${simUrl}/sim/v1/sent`, { headers: ops })

/**
 * Runs `tick(i)` at `perSecond` for as long as `running()` holds, without waiting for each to
 * finish (an open loop, as independent clients are); resolves when every tick has.
 */
export const steady = async (perSecond: number, running: () => boolean, tick: (i: number) => Promise<void>) => {
  const started = Date.now()
  const pending: Array<Promise<void>> = []
  for (let i = 0; running(); i++) {
    const due = started + (i * 1000) / perSecond
    const wait = due - Date.now()
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait))
    const ticked = tick(i)
    // Its failure is reported by the Promise.all below, not as an unhandled rejection meanwhile.
    ticked.catch(() => {})
    pending.push(ticked)
  }
  await Promise.all(pending)
}

/**
 * Every accepted send reached the network exactly once, and nothing else did. A send accepted
 * while its number was moving may be recorded as pending and go out on the entity's next sweep
 * (30 s), so this waits up to 45 s for the accepted ones to arrive.
 */
export const assertSentOnce = async (simUrl: string, tag: string, outcomes: ReadonlyArray<SendOutcome>) => {
  const accepted = outcomes.filter((o) => o.status === 200).map((o) => o.text)
  const deadline = Date.now() + 45_000
  let log: ReadonlyArray<Sent> = []
  const counts = new Map<string, number>()
  let lost: Array<string> = []
  for (;;) {
    log = (await sentLog(simUrl)).filter((m) => m.text?.startsWith(`${tag}-`))
    counts.clear()
    for (const m of log) counts.set(m.text!, (counts.get(m.text!) ?? 0) + 1)
    lost = accepted.filter((text) => !counts.has(text))
    if (lost.length === 0 || Date.now() > deadline) break
    await new Promise((resolve) => setTimeout(resolve, 1000))
  }
  const twice = [...counts].filter(([, n]) => n > 1).map(([text]) => text)
  const acceptedSet = new Set(accepted)
  const unaccepted = [...counts.keys()].filter((text) => !acceptedSet.has(text))
  deepStrictEqual({ twice, lost, unaccepted }, { twice: [], lost: [], unaccepted: [] })
  return log
}

/** Every incoming message the peers wrote is stored. */
export const assertIncomingKept = (cluster: { readonly sql: SqlClient.SqlClient }, ids: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const missing = () =>
      Effect.map(
        cluster.sql<{ wa_message_id: string }>`
          SELECT wa_message_id FROM messages WHERE direction = 'in' AND wa_message_id IN ${cluster.sql.in(ids)}`,
        (rows) => {
          const stored = new Set(rows.map((r) => r.wa_message_id))
          return ids.filter((id) => !stored.has(id))
        }
      ).pipe(Effect.orDie)
    const deadline = Date.now() + 30_000
    let left = yield* missing()
    while (left.length > 0 && Date.now() < deadline) {
      yield* Effect.sleep("500 millis")
      left = yield* missing()
    }
    deepStrictEqual(left, [])
  })

/**
 * Every message the network took reaches `read` (the simulator reads each 2 s after its send),
 * however often its number moved meanwhile: an ack on its way when a number's session closed is
 * stored by that session or by the number's next one, never lost.
 */
export const assertAllRead = (cluster: { readonly sql: SqlClient.SqlClient }) =>
  Effect.gen(function*() {
    const unread = Effect.map(
      cluster.sql<{ text: string; status: string }>`
        SELECT text, status FROM messages WHERE direction = 'out' AND status <> 'read' ORDER BY id`,
      (rows) => rows.map((r) => `${r.text}: ${r.status}`)
    ).pipe(Effect.orDie)
    const deadline = Date.now() + 30_000
    let left = yield* unread
    while (left.length > 0 && Date.now() < deadline) {
      yield* Effect.sleep("500 millis")
      left = yield* unread
    }
    deepStrictEqual(left, [])
  })
