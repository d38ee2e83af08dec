/**
 * Every request body is read and checked here, once: at most `MAX_BODY_BYTES` (413 with a JSON
 * answer, chunked or not), UTF-8, JSON whatever its label (multipart and form labels included),
 * nested at most {@link MAX_DEPTH} levels, and no text in it (or in the query) holding U+0000 or
 * an unpaired UTF-16 surrogate, which PostgreSQL cannot store and no client means to send. See
 * docs/api-decisions.md, "Text the API accepts".
 *
 * The body is read when a handler first asks for it, which is after the key (or operator token)
 * was checked, and the query is checked by that check once it passed ({@link checkQuery}): a
 * request without a valid key learns nothing about its input, and costs no read of its body
 * (docs/errors.md, "Order of checks"). Only a body announced larger than the limit is refused
 * before that, so it is never read.
 */
import * as HttpMethod from "@effect/platform/HttpMethod"
import { RequestError } from "@effect/platform/HttpServerError"
import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import { type ApiError, InvalidFrom, InvalidJson, InvalidParam, PayloadTooLarge } from "@wagate/domain/ApiError"
import * as Effect from "effect/Effect"
import type * as Exit from "effect/Exit"

/** Deepest nesting of arrays and objects a body may have; no endpoint needs more than four. */
export const MAX_DEPTH = 32

const SUSPECT = /[\u0000\ud800-\udfff]/
const BROKEN = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

/** Whether `s` can be stored as text: no U+0000 and no unpaired surrogate. */
export const isStorableText = (s: string): boolean => !SUSPECT.test(s) || !BROKEN.test(s)

interface Step {
  readonly key: string | number
  readonly parent: Step | undefined
}

const render = (step: Step | undefined): string => {
  const keys: Array<string | number> = []
  for (let s = step; s !== undefined; s = s.parent) keys.unshift(s.key)
  return keys.reduce<string>(
    (path, key) => typeof key === "number" ? `${path}[${key}]` : path === "" ? key : `${path}.${key}`,
    ""
  )
}

const badText = (path: string): ApiError => {
  const error = `${path === "" ? "The body" : path} holds U+0000 or an unpaired UTF-16 surrogate, which cannot be stored`
  return path === "from" ? new InvalidFrom({ error }) : new InvalidParam({ error })
}

/**
 * The first problem of a parsed body: nesting too deep, or a string (value or key) that cannot
 * be stored. Walks with its own stack, so no nesting can overflow the call stack.
 */
export const inspect = (root: unknown, checkText = true): ApiError | undefined => {
  const stack: Array<readonly [unknown, Step | undefined, number]> = [[root, undefined, 0]]
  while (stack.length > 0) {
    const [value, at, depth] = stack.pop()!
    if (typeof value === "string") {
      if (checkText && !isStorableText(value)) return badText(render(at))
      continue
    }
    if (typeof value !== "object" || value === null) continue
    if (depth >= MAX_DEPTH) return new InvalidJson({ error: `The body nests deeper than ${MAX_DEPTH} levels` })
    if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) stack.push([value[i], { key: i, parent: at }, depth + 1])
    } else {
      for (const [key, item] of Object.entries(value)) {
        const step = { key, parent: at }
        if (checkText && !isStorableText(key)) return badText(render(step))
        stack.push([item, step, depth + 1])
      }
    }
  }
  return undefined
}

/** The first query parameter (name or value) that cannot be stored. */
export const inspectQuery = (url: string): ApiError | undefined => {
  const mark = url.indexOf("?")
  if (mark < 0) return undefined
  for (const [key, value] of new URLSearchParams(url.slice(mark + 1))) {
    if (!isStorableText(key)) return new InvalidParam({ error: "A query parameter's name holds U+0000" })
    if (!isStorableText(value)) return badText(key)
  }
  return undefined
}

/**
 * Refuses a query that cannot be stored, dying with its API error like a refused body (below).
 * Each credential check runs it once the credentials passed.
 */
export const checkQuery = (request: HttpServerRequest.HttpServerRequest): Effect.Effect<void> => {
  const problem = inspectQuery(request.url)
  return problem === undefined ? Effect.void : Effect.die(problem)
}

/**
 * Bytes that are not UTF-8 are refused, not replaced with U+FFFD: that would send or store
 * something else than what the client wrote (a Latin-1 "é", say). A byte order mark is kept, and
 * JSON.parse refuses it as before.
 */
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true })

const decode = (bytes: Buffer): Effect.Effect<string, InvalidJson> => {
  try {
    return Effect.succeed(utf8.decode(bytes))
  } catch {
    return Effect.fail(new InvalidJson({ error: "The body is not valid UTF-8; send JSON encoded in UTF-8" }))
  }
}

/**
 * Reads the whole body, at most `maxBytes`. Past the limit it stops reading and fails with
 * 413; the answer then closes the connection, so the rest is never read. (Node's own stream
 * helpers destroy the socket instead, and the client gets no answer at all.)
 */
const readText = (request: HttpServerRequest.HttpServerRequest, maxBytes: number) =>
  Effect.async<string, PayloadTooLarge | InvalidJson>((resume) => {
    const source = NodeHttpServerRequest.toIncomingMessage(request)
    const chunks: Array<Buffer> = []
    let bytes = 0
    const detach = () => {
      source.off("data", onData)
      source.off("end", onEnd)
      source.off("error", onGone)
      source.off("aborted", onGone)
    }
    const onData = (chunk: Buffer) => {
      bytes += chunk.length
      if (bytes > maxBytes) {
        detach()
        source.pause()
        return resume(Effect.fail(new PayloadTooLarge()))
      }
      chunks.push(chunk)
    }
    const onEnd = () => {
      detach()
      resume(decode(Buffer.concat(chunks)))
    }
    // The client went away: nobody is left to answer.
    const onGone = () => {
      detach()
      resume(Effect.interrupt)
    }
    source.on("data", onData)
    source.once("end", onEnd)
    source.once("error", onGone)
    source.once("aborted", onGone)
    return Effect.sync(detach)
  })

/**
 * The simulator's inbound messages stand for what the network delivers, which the gateway does
 * not choose: they may carry any text, so that its handling of such messages can be tried.
 */
const carriesNetworkText = (url: string) => url.split("?")[0] === "/sim/v1/inbound"

/**
 * The MCP endpoint answers a body that is no JSON it takes (not UTF-8, not JSON, an empty body,
 * nested too deep) with JSON-RPC's own parse error, and checks the text of each tool call's
 * arguments itself (McpLive), refusing that call as a tool error rather than the whole request
 * (which may be a batch) with an answer no MCP client reads.
 */
const isMcp = (url: string) => url.split("?")[0] === "/api/mcp"

/**
 * A payment provider's event is whatever the provider sends: its adapter reads it (an empty or
 * odd body is its refusal to make).
 */
const isPaymentEvent = (url: string) => url.startsWith("/payments/")

/**
 * The body every other endpoint takes is a JSON object, or none (an empty body or `null`, which
 * the few endpoints whose body is optional take as none, and the others refuse: ApiErrors).
 */
const notAnObject = (value: unknown) => value !== null && (typeof value !== "object" || Array.isArray(value))

/** The refusal of a body that is no JSON object: none (empty, or `null`) or another value. */
export const notAnObjectBody = (value: unknown) =>
  new InvalidJson({
    error: value === null ? "The body is empty or null; send a JSON object" : "The body must be a JSON object"
  })

const parse = (text: string, url: string) =>
  Effect.suspend(() => {
    const anyValue = isMcp(url) || isPaymentEvent(url)
    if (text === "" && !isMcp(url)) return Effect.succeed<unknown>(null)
    let value: unknown
    try {
      value = JSON.parse(text)
    } catch {
      // A syntax error, or nesting so deep that the parser itself gave up.
      return Effect.fail(new InvalidJson())
    }
    if (!anyValue && notAnObject(value)) return Effect.fail(notAnObjectBody(value))
    const checkText = !carriesNetworkText(url) && !isMcp(url)
    const problem = inspect(value, checkText)
    return problem === undefined ? Effect.succeed(value) : Effect.fail(problem)
  })

interface Body {
  readonly text: string
  readonly json: unknown
}

/**
 * `request` whose `text` and `json` read, parse and check its body the first time either is
 * asked for, and answer from memory after that. A refused body dies with its API error, as the
 * platform's own decoding of a payload dies when its read fails: no handler's recovery can turn
 * the refusal into something else, and the error middleware answers it (`ApiErrors`). Only on
 * /api/mcp does a body that is no JSON it takes fail instead, as the platform's own `json` fails
 * on a body that is not JSON (`RequestError`, its sentence as description), for the tool server
 * to answer with JSON-RPC's parse error; too large a body dies there too (413).
 */
const withBody = (
  request: HttpServerRequest.HttpServerRequest,
  body: Effect.Effect<Body, RequestError>
): HttpServerRequest.HttpServerRequest =>
  Object.create(request, {
    text: { value: Effect.map(body, (read) => read.text) },
    json: { value: Effect.map(body, (read) => read.json) },
    modify: {
      value: (options: Parameters<HttpServerRequest.HttpServerRequest["modify"]>[0]) => withBody(request.modify(options), body)
    }
  })

const readOnce = (
  request: HttpServerRequest.HttpServerRequest,
  maxBytes: number,
  url: string
): Effect.Effect<Body, RequestError> => {
  const refuse = (problem: ApiError) =>
    problem instanceof InvalidJson && isMcp(url)
      ? Effect.fail(new RequestError({ request, reason: "Decode", cause: problem, description: problem.error }))
      : Effect.die(problem)
  const read = readText(request, maxBytes).pipe(
    Effect.flatMap((text) => Effect.map(parse(text, url), (json): Body => ({ text, json }))),
    Effect.catchAll(refuse)
  )
  let outcome: Exit.Exit<Body, RequestError> | undefined
  return Effect.suspend(() =>
    outcome ?? Effect.onExit(read, (exit) =>
      Effect.sync(() => {
        outcome = exit
      }))
  )
}

/**
 * The request as handlers should see it: labelled JSON, its body read, parsed and checked when
 * first asked for; or 413 for a body announced larger than `maxBytes`, which is not read at all.
 */
export const prepare = (
  original: HttpServerRequest.HttpServerRequest,
  maxBytes: number
): HttpServerRequest.HttpServerRequest | PayloadTooLarge => {
  if (!HttpMethod.hasBody(original.method)) return original
  if (Number(original.headers["content-length"] ?? 0) > maxBytes) return new PayloadTooLarge()
  // Bodies are JSON whatever the client labelled them (curl -d sends form encoding, and no
  // endpoint takes multipart).
  const request = original.headers["content-type"]?.startsWith("application/json")
    ? original
    : original.modify({ headers: { ...original.headers, "content-type": "application/json" } })
  return withBody(request, readOnce(request, maxBytes, original.url))
}
