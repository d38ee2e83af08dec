/**
 * The check behind /ops/v1 and /sim/v1: the bearer must be the operator token. A wrong token
 * counts against the caller's address like a wrong API key (429 from the 30th wrong try in a
 * minute), but in a budget of its own: customers' wrong keys from the operator's address do not
 * use it up, nor do the operator's wrong tokens use up theirs.
 */
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import { InvalidKey, RateLimited, Unauthorized } from "@wagate/domain/ApiError"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import { Settings } from "../Config.js"
import { clientIp } from "../http/Authentication.js"
import { checkQuery } from "../http/RequestBody.js"
import { RequestCounter } from "../infra/RequestCounter.js"
import { wrongCredential } from "./KeyAuth.js"
import { OperatorToken } from "./OperatorToken.js"

export const makeOperatorCheck = Effect.gen(function*() {
  const token = yield* OperatorToken
  const counter = yield* RequestCounter
  const { trustProxy } = yield* Settings
  return (
    bearer: Redacted.Redacted
  ): Effect.Effect<void, Unauthorized | InvalidKey | RateLimited, HttpServerRequest.HttpServerRequest> => {
    const value = Redacted.value(bearer)
    if (value === "") return Effect.fail(new Unauthorized({ error: "Operator token required" }))
    return HttpServerRequest.HttpServerRequest.pipe(
      Effect.flatMap((request) =>
        // The query is checked only for the right token (RequestBody).
        token.matches(value)
          ? checkQuery(request)
          : wrongCredential(
            counter,
            "operator",
            clientIp(request, trustProxy),
            new InvalidKey({ error: "Operator token is not valid" })
          )
      )
    )
  }
})
