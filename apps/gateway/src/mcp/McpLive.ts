/**
 * The tool server at /api/mcp, on the gateway's own code paths: the REST API's key check and
 * request limits, number scoping, and the handlers' operations (a send is the REST send with
 * `source` mcp).
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { InvalidFrom, InvalidParam } from "@wagate/domain/ApiError"
import { isSqlError, logStorageError, storageFailure } from "@wagate/entities/RequestGuard"
import { type Arguments, McpGateway, type Refusal } from "@wagate/mcp/McpGateway"
import * as McpHttp from "@wagate/mcp/McpHttp"
import type { SentMessage } from "@wagate/mcp/Tools"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { KeyAuth, keyRateLimited } from "../auth/KeyAuth.js"
import { Settings } from "../Config.js"
import { clientIp, keyOf } from "../http/Authentication.js"
import { makeStatus } from "../http/handlers/AccountHttp.js"
import { makeCheck } from "../http/handlers/ContactsHttp.js"
import { makeLimits } from "../http/handlers/LimitsHttp.js"
import { makeSendMessage, type SendAnswer } from "../http/handlers/SendHttp.js"
import { inspect } from "../http/RequestBody.js"

/**
 * Refuses arguments holding text that cannot be stored (U+0000, an unpaired surrogate) as the
 * REST API refuses such a body (RequestBody, which leaves /api/mcp's to the tool): `invalid_param`
 * naming the argument, `invalid_from` for `from`, as this call's tool error.
 */
const storable = (args: Arguments) => {
  const problem = inspect(args)
  return problem === undefined ? Effect.void : Effect.fail(problem)
}

/** `from` as the REST bodies take it: a number id or a phone. */
const fromOf = (from: unknown) =>
  from === undefined || typeof from === "string" || typeof from === "number"
    ? Effect.succeed(from)
    : Effect.fail(new InvalidFrom())

/**
 * The stored answer of an earlier send with the same idempotency key, as a tool's outcome: a 200
 * with the number's allowance now, as the REST replay's X-RateLimit-* headers carry it.
 */
const replayed = (answer: Extract<SendAnswer, { _tag: "Replayed" }>): Effect.Effect<SentMessage, Refusal> => {
  const body = answer.body as Record<string, any>
  return answer.status === 200
    ? Effect.succeed({
      ok: true,
      id: body.id,
      wa_message_id: body.wa_message_id,
      from: body.from,
      ...Option.match(answer.quota, { onNone: () => ({}), onSome: (quota) => ({ quota }) })
    })
    : Effect.fail({ code: String(body.code), error: String(body.error) })
}

/**
 * A storage error met by a tool's operation outside the entities (a read of the account, a key's
 * lookup) refuses the call by its kind, as the REST API answers it (`ApiErrors`): `capacity`
 * with a retry time when trying again helps, `internal_error` for a fault of the gateway.
 */
const storageRefusals = <A>(operation: Effect.Effect<A, Refusal>): Effect.Effect<A, Refusal> =>
  Effect.catchSomeDefect(operation, (defect) => {
    if (!isSqlError(defect)) return Option.none()
    return Option.some(Effect.zipRight(logStorageError("tool call failed on a storage error", defect), Effect.fail(storageFailure(defect))))
  })

const make = Effect.gen(function*() {
  const auth = yield* KeyAuth
  const { trustProxy } = yield* Settings
  const send = yield* makeSendMessage
  const status = yield* makeStatus
  const limits = yield* makeLimits
  const check = yield* makeCheck

  return McpGateway.of({
    authenticate: (request) => auth.authenticate(keyOf(request.headers), clientIp(request, trustProxy)),
    countMessages: (principal, messages) =>
      Effect.map(auth.countMore(principal.keyId, messages), (fit) => ({ fit, refusal: keyRateLimited() })),
    sendMessage: (principal, args) =>
      storageRefusals(Effect.gen(function*() {
        yield* storable(args)
        const key = args.idempotency_key
        if (key !== undefined && typeof key !== "string") {
          return yield* new InvalidParam({ error: "idempotency_key must be a string" })
        }
        const answer = yield* send(principal, args, key, "mcp")
        if (answer._tag === "Replayed") return yield* replayed(answer)
        const { numberId, sent } = answer
        return {
          ok: true,
          id: sent.messageId,
          wa_message_id: sent.waMessageId,
          from: { id: numberId, phone: sent.phone },
          quota: sent.quota
        } satisfies SentMessage
      })),
    getStatus: (principal) => storageRefusals(status(principal)),
    getLimits: (principal, args) =>
      storageRefusals(storable(args).pipe(
        Effect.zipRight(fromOf(args.from)),
        Effect.flatMap((from) => limits(principal, from))
      )),
    checkNumber: (principal, args) =>
      storageRefusals(Effect.gen(function*() {
        yield* storable(args)
        const from = yield* fromOf(args.from)
        if (typeof args.phone !== "string") {
          return yield* new InvalidParam({ error: "phone must be digits in international format" })
        }
        return yield* check(principal, { phone: args.phone, from })
      }))
  })
})

/** Serves /api/mcp beside the REST API. */
export const McpLive = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function*() {
    const gateway = yield* make
    const { mcpAllowedHosts } = yield* Settings
    yield* router.all(
      McpHttp.MCP_PATH,
      McpHttp.handle({ allowedHosts: mcpAllowedHosts }).pipe(Effect.provideService(McpGateway, gateway))
    )
  })
)
